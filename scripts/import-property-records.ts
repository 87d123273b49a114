/**
 * Deprecated alias, kept for one release: `npm run import:records -- FILE` is now
 * `npm run admin -- records import FILE`, which imports through the running service.
 */
import { runAdmin } from '../src/cli/main.js';

console.error('import:records is deprecated and will be removed in the next release: use `npm run admin -- records import FILE`.');
process.exitCode = await runAdmin(['records', 'import', ...process.argv.slice(2)]);
