import { describe, expect, it } from 'vitest';
import { schema } from '../../src/app/schema.js';
import { validatePersistedDocuments } from '../../src/http/gateway/gateway-call.route.js';

/** Start-up no longer validates the persisted documents: the build does, with this function. */
describe('validatePersistedDocuments', () => {
  it('accepts every persisted document of the build', () => {
    expect(() => validatePersistedDocuments(schema)).not.toThrow();
  });

  it('refuses a document the schema does not allow, naming it', () => {
    expect(() => validatePersistedDocuments(schema, [['sha256:bad', 'query Bad { noSuchField }']])).toThrow(
      /Persisted document sha256:bad is invalid: .*noSuchField/,
    );
  });
});
