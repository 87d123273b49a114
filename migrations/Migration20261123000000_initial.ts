import { Migration } from '@mikro-orm/migrations';

/**
 * Organizations, users, gateway keys, the notification catalog and the feed.
 *
 * Feed counts come from `notification_counters`, maintained by statement-level triggers in the
 * same transaction as every insert, mark and delete: counts stay exact at any feed size without
 * scanning a feed, whichever code path writes the rows.
 */
export class Migration20261123000000_initial extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create extension if not exists pg_trgm;`);

    this.addSql(`create table organizations (
      id uuid primary key,
      name text not null,
      skip_trace_enabled boolean not null default true,
      skip_trace_credits integer not null default 0 check (skip_trace_credits >= 0),
      created_at timestamptz(3) not null default now()
    );`);

    this.addSql(`create table users (
      id uuid primary key,
      organization_id uuid not null references organizations (id) on delete cascade,
      email text not null,
      name text,
      role text not null default 'MEMBER' check (role in ('ADMIN', 'MEMBER')),
      created_at timestamptz(3) not null default now()
    );`);
    this.addSql(`create unique index users_organization_email_key on users (organization_id, lower(email));`);

    this.addSql(`create table api_keys (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      key_hash text not null unique,
      hint text not null,
      scopes text[] not null,
      created_at timestamptz(3) not null default now(),
      revoked_at timestamptz(3)
    );`);
    this.addSql(`create index api_keys_user_id_idx on api_keys (user_id);`);

    this.addSql(`create table notification_types (
      notification_type text primary key,
      label text not null,
      category text not null
    );`);
    this.addSql(`insert into notification_types (notification_type, label, category) values
      ('deal_created', 'Deal created', 'deals'),
      ('deal_assigned', 'Deal assigned to you', 'deals'),
      ('deal_stage_changed', 'Deal stage changed', 'deals'),
      ('contact_created', 'Contact created', 'contacts'),
      ('contact_assigned', 'Contact assigned to you', 'contacts'),
      ('note_mention', 'Mentioned in a note', 'notes'),
      ('reply_received', 'Reply received', 'replies'),
      ('task_assigned', 'Task assigned to you', 'tasks'),
      ('task_due_soon', 'Task due soon', 'tasks'),
      ('task_overdue', 'Task overdue', 'tasks'),
      ('task_completed', 'Task completed', 'tasks'),
      ('call_missed', 'Missed call', 'calls'),
      ('call_voicemail', 'New voicemail', 'calls'),
      ('skip_trace_completed', 'Skip trace completed', 'skip_trace');`);

    this.addSql(`create table notifications (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      notification_type text not null references notification_types (notification_type),
      is_seen boolean not null default false,
      title text not null,
      body text not null,
      created_at timestamptz(3) not null default now(),
      seen_at timestamptz(3),
      contact_id text,
      deal_id text,
      note_id text,
      reply_id text,
      task_id text,
      call_id text,
      action_type text,
      action_target_id text
    );`);
    // Keyset pages per user (newest first), per user and type, and per user and seen state.
    this.addSql(`create index notifications_feed_idx on notifications (user_id, created_at desc, id desc);`);
    this.addSql(`create index notifications_type_feed_idx on notifications (user_id, notification_type, created_at desc, id desc);`);
    this.addSql(`create index notifications_seen_feed_idx on notifications (user_id, is_seen, created_at desc, id desc);`);
    // Case-insensitive substring search (ILIKE '%term%') on title and body.
    this.addSql(`create index notifications_title_trgm_idx on notifications using gin (title gin_trgm_ops);`);
    this.addSql(`create index notifications_body_trgm_idx on notifications using gin (body gin_trgm_ops);`);

    this.addSql(`create table notification_counters (
      user_id uuid not null references users (id) on delete cascade,
      notification_type text not null,
      unread_count integer not null default 0,
      read_count integer not null default 0,
      primary key (user_id, notification_type)
    );`);

    // Applies each statement's net change per (user, type) in one upsert, sorted so concurrent
    // writers lock counter rows in the same order. Transition tables make bulk inserts cheap.
    this.addSql(`create function notification_counters_apply() returns trigger language plpgsql as $fn$
    declare
      added constant text := 'select user_id, notification_type, (not is_seen)::int as unread_delta, is_seen::int as read_delta from new_rows';
      removed constant text := 'select user_id, notification_type, -((not is_seen)::int), -(is_seen::int) from old_rows';
    begin
      -- Transition tables exist only for their own event, so the source is chosen per event.
      execute format($sql$
        insert into notification_counters as c (user_id, notification_type, unread_count, read_count)
        select user_id, notification_type, sum(unread_delta), sum(read_delta)
        from (%s) deltas
        group by user_id, notification_type
        having sum(unread_delta) <> 0 or sum(read_delta) <> 0
        order by user_id, notification_type
        on conflict (user_id, notification_type) do update
          set unread_count = c.unread_count + excluded.unread_count,
              read_count = c.read_count + excluded.read_count
      $sql$, case tg_op when 'INSERT' then added when 'DELETE' then removed else added || ' union all ' || removed end);
      return null;
    end $fn$;`);
    this.addSql(`create trigger notifications_count_insert after insert on notifications
      referencing new table as new_rows for each statement execute function notification_counters_apply();`);
    this.addSql(`create trigger notifications_count_update after update on notifications
      referencing old table as old_rows new table as new_rows for each statement execute function notification_counters_apply();`);
    this.addSql(`create trigger notifications_count_delete after delete on notifications
      referencing old table as old_rows for each statement execute function notification_counters_apply();`);
  }
}
