import { Migration } from '@mikro-orm/migrations';

/**
 * Each notification records the transaction that inserted it, so a mark of everything that has to
 * wait its turn still marks only the rows that existed when the call began: it takes the database's
 * snapshot as it arrives and, once its turn comes, skips rows whose inserting transaction that
 * snapshot does not see (`updateAllSeen`). `xmin` cannot serve: every mark rewrites it.
 *
 * The column is added without a default first, which changes only the catalog (no rewrite of a large
 * table); rows from before it read null, and were all there before any call that compares. Both
 * statements may run again harmlessly.
 */
export class Migration20261128000000_notification_inserted_xid extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table notifications add column if not exists inserted_xid xid8;`);
    this.addSql(`alter table notifications alter column inserted_xid set default pg_current_xact_id();`);
  }
}
