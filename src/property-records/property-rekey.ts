/**
 * Run by a migration when ADDRESS_KEY_VERSION changes: new keys come from re-standardizing the stored
 * columns, and rows that become one address are merged (docs/architecture.md, "Re-keying property records").
 */
import { addressKey, standardizeAddress } from '../address/index.js';

/** The migration's own executor: `?` placeholders, jsonb passed as JSON text. */
export type Execute = (sql: string, params?: unknown[]) => Promise<unknown[]>;

/** Bounds memory whatever the table's size. */
const BATCH = 1000;

interface StoredProperty {
  id: string;
  line1: string;
  city: string;
  state: string;
  zip5: string;
}

export async function rekeyPropertyRecords(execute: Execute): Promise<{ properties: number; merged: number }> {
  await execute(`create temp table property_rekey (
    id uuid primary key, address_key text not null, line1 text not null, city text not null, state text not null, zip5 text not null
  ) on commit drop`);

  let properties = 0;
  for (let after: string | null = null; ;) {
    const columns = `select id, line1, city, state, zip5 from properties`;
    const rows = (await (after === null
      ? execute(`${columns} order by id limit ${BATCH}`)
      : execute(`${columns} where id > ? order by id limit ${BATCH}`, [after]))) as StoredProperty[];
    if (rows.length === 0) break;
    const rekeyed = rows.map((row) => {
      const address = standardizeAddress({ line1: row.line1, city: row.city, state: row.state, zip: row.zip5 });
      return {
        id: row.id,
        address_key: addressKey(address),
        line1: address.line1,
        city: address.city,
        state: address.state,
        zip5: address.zip5,
      };
    });
    await execute(
      `insert into property_rekey select * from jsonb_to_recordset(?::jsonb)
         as r(id uuid, address_key text, line1 text, city text, state text, zip5 text)`,
      [JSON.stringify(rekeyed)],
    );
    properties += rows.length;
    after = rows[rows.length - 1].id;
  }

  const merged = await mergeSameAddresses(execute);
  // Through a placeholder key first, so no row ever holds a key another row still holds.
  await execute(`update properties p set address_key = 'rekey:' || p.id::text from property_rekey r where r.id = p.id`);
  await execute(
    `update properties p set address_key = r.address_key, line1 = r.line1, city = r.city, state = r.state, zip5 = r.zip5
     from property_rekey r where r.id = p.id`,
  );
  return { properties, merged };
}

/** The newest row survives with its owners first, so no owner is lost. */
async function mergeSameAddresses(execute: Execute): Promise<number> {
  await execute(`create temp table property_rekey_rank on commit drop as
    select r.id,
      first_value(r.id) over same_address as survivor_id,
      row_number() over same_address as rank
    from property_rekey r join properties p on p.id = r.id
    window same_address as (partition by r.address_key order by p.updated_at desc, p.id desc)`);
  // Negative positions first: (property_id, position) is unique and the survivor's owners move too.
  await execute(
    `update property_owners o set property_id = m.survivor_id, position = -1 - m.position
     from (
       select o.id, k.survivor_id, row_number() over (partition by k.survivor_id order by k.rank, o.position) - 1 as position
       from property_owners o join property_rekey_rank k on k.id = o.property_id
       where k.survivor_id in (select survivor_id from property_rekey_rank where rank > 1)
     ) m
     where o.id = m.id`,
  );
  await execute(`update property_owners set position = -1 - position where position < 0`);
  const merged = (await execute(`delete from properties where id in (select id from property_rekey_rank where rank > 1) returning id`))
    .length;
  await execute(`delete from property_rekey where id not in (select id from properties)`);
  return merged;
}
