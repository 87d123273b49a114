import { Migration } from '@mikro-orm/migrations';

/**
 * Who issued each key (`created_by`: 'platform' or the issuing gateway key's id), and ADMIN
 * removed for good from the keys of users who are no longer ADMIN.
 */
export class Migration20261124000000_key_issuers extends Migration {
  override async up(): Promise<void> {
    // Keys issued before this stay null ("not recorded"), not 'platform': until now an organization
    // ADMIN could issue keys for other members, so any value would be a guess.
    this.addSql(`alter table api_keys add column created_by text;`);
    this.addSql(`alter table skip_trace_keys add column created_by text;`);

    // Demoted users' keys kept ADMIN dormant until a re-promotion; lowering a role now removes it
    // (setUserRole), so existing demotions are brought to the same state. A key whose only scope
    // was ADMIN would grant nothing and is revoked.
    this.addSql(`update api_keys k
        set scopes = array_remove(k.scopes, 'ADMIN'),
            revoked_at = case when k.scopes = array['ADMIN'] then coalesce(k.revoked_at, now()) else k.revoked_at end
       from users u
      where u.id = k.user_id and u.role <> 'ADMIN' and 'ADMIN' = any(k.scopes);`);
  }
}
