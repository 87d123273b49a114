import { Migration20261123000000_initial } from './Migration20261123000000_initial.js';

/** Migrations in order; listed explicitly so PostgreSQL and the embedded PGlite run the same ones from source. */
export const migrationsList = [{ name: 'Migration20261123000000_initial', class: Migration20261123000000_initial }];
