import { Migration } from '@mikro-orm/migrations';
import { rekeyPropertyRecords } from '../src/property-records/property-rekey.js';

/**
 * Re-keys property records with the address identity (ADDRESS_KEY_VERSION 2): the first key
 * dropped unit designators (`STE 4` was `APT 4`), and missed numbered-street ordinals, rural and
 * highway contract routes and ordinal floors. See property-rekey.ts for how rows are re-keyed and
 * merged.
 *
 * A migration rather than a re-key at every start: it runs once per database, in one transaction
 * (under the migration lock on PostgreSQL), on PostgreSQL and the embedded PGlite alike. A later change of the
 * identity bumps ADDRESS_KEY_VERSION and adds another migration that calls the same re-keying.
 * Cached traces need nothing: their key version changed too, so old entries are never read again
 * and expire.
 */
export class Migration20261124000000_address_identity extends Migration {
  override async up(): Promise<void> {
    await rekeyPropertyRecords((sql, params) => this.execute(sql, params));
  }
}
