/**
 * A build step (`npm run build`): the persisted documents are fixed when the service is built, so
 * they are validated against the schema here, once, rather than at every start.
 */
import { schema } from '../src/app/schema.js';
import { validatePersistedDocuments } from '../src/http/gateway/gateway-call.route.js';

try {
  validatePersistedDocuments(schema);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
