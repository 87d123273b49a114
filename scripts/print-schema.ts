import { writeFileSync } from 'node:fs';
import { printedSchema } from '../src/app/schema.js';

// Regenerates the checked-in schema.graphql; a test fails while it is stale.
writeFileSync(new URL('../schema.graphql', import.meta.url), printedSchema);
console.log('wrote schema.graphql');
