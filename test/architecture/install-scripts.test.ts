/**
 * README, Node versions: npm 11 asks that every dependency's install script be reviewed
 * (`allowScripts` in package.json); one left out makes `npm ci` warn about it. Every package of the
 * lockfile with an install script is allowed or declined there, and `.npmrc` keeps `npm ci` on a
 * Node 20 machine free of the EBADENGINE warnings of dependencies that run on the project's Node 24.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { allowScripts: Record<string, boolean> };
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<string, { hasInstallScript?: boolean }>;
};

describe('npm ci without noise', () => {
  it('every dependency with an install script is reviewed in allowScripts', () => {
    const withScripts = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts.length).toBeGreaterThan(0);
    for (const name of new Set(withScripts))
      expect({ name, reviewed: typeof pkg.allowScripts[name] }).toEqual({ name, reviewed: 'boolean' });
  });

  it('.npmrc shows npm errors only', () => {
    expect(readFileSync('.npmrc', 'utf8')).toMatch(/^loglevel=error$/m);
  });
});
