import { Migration } from '@mikro-orm/migrations';

/**
 * Property records for the `records` skip-trace provider.
 *
 * A property is identified by `address_key`, the skip-trace cache key of its standardized address
 * without an actor, so every spelling of one address finds the same row. Owners and their persons
 * hang off it in import order (`position`); a re-import deletes the owners (cascading to persons)
 * and inserts the new ones. The `*_key` columns hold the normalized names the matcher compares.
 */
export class Migration20261123000100_property_records extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table properties (
      id uuid primary key,
      address_key text not null unique,
      line1 text not null,
      city text not null,
      state text not null,
      zip5 text not null,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    );`);

    this.addSql(`create table property_owners (
      id uuid primary key,
      property_id uuid not null references properties (id) on delete cascade,
      position integer not null,
      type text not null check (type in ('person', 'entity')),
      name text,
      name_key text,
      unique (property_id, position)
    );`);

    this.addSql(`create table property_persons (
      id uuid primary key,
      owner_id uuid not null references property_owners (id) on delete cascade,
      position integer not null,
      first_name text,
      last_name text,
      middle_name text,
      first_key text,
      last_key text,
      age integer,
      phones jsonb not null default '[]',
      emails jsonb not null default '[]',
      unique (owner_id, position)
    );`);
  }
}
