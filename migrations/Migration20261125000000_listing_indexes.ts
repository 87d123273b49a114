import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes for the operators' listings (organizations, an organization's users, a user's keys),
 * newest first: each page is a keyset walk of its index, never a sort of the table.
 */
export class Migration20261125000000_listing_indexes extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index organizations_listing_idx on organizations (created_at desc, id desc);`);
    this.addSql(`create index users_listing_idx on users (organization_id, created_at desc, id desc);`);
    // Leads with user_id, so it also serves every lookup the single-column index served.
    this.addSql(`create index api_keys_listing_idx on api_keys (user_id, created_at desc, id desc);`);
    this.addSql(`drop index api_keys_user_id_idx;`);
  }
}
