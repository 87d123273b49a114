import { Migration20261123000000_initial } from './Migration20261123000000_initial.js';
import { Migration20261123000100_property_records } from './Migration20261123000100_property_records.js';
import { Migration20261123000200_skip_trace } from './Migration20261123000200_skip_trace.js';
import { Migration20261124000000_address_identity } from './Migration20261124000000_address_identity.js';
import { Migration20261124000000_key_issuers } from './Migration20261124000000_key_issuers.js';
import { Migration20261125000000_listing_indexes } from './Migration20261125000000_listing_indexes.js';
import { Migration20261126000000_billing } from './Migration20261126000000_billing.js';
import { Migration20261127000000_counter_deletes } from './Migration20261127000000_counter_deletes.js';
import { Migration20261128000000_notification_inserted_xid } from './Migration20261128000000_notification_inserted_xid.js';
import { Migration20261128000300_answer_carriers } from './Migration20261128000300_answer_carriers.js';
import { Migration20261129000000_list_usage } from './Migration20261129000000_list_usage.js';
import { Migration20261129000100_skip_trace_jobs } from './Migration20261129000100_skip_trace_jobs.js';
import { Migration20261129000200_webhooks } from './Migration20261129000200_webhooks.js';
import { Migration20261129000300_notification_archive } from './Migration20261129000300_notification_archive.js';
import { Migration20261129000400_read_marks } from './Migration20261129000400_read_marks.js';
import { Migration20261129000500_notification_expiry } from './Migration20261129000500_notification_expiry.js';
import { Migration20261129000600_mark_all_expired } from './Migration20261129000600_mark_all_expired.js';
import { Migration20261129000700_sweep_by_user } from './Migration20261129000700_sweep_by_user.js';
import { Migration20261129000800_seen_states_inlined } from './Migration20261129000800_seen_states_inlined.js';
import { Migration20261129000900_counters_inlined_state } from './Migration20261129000900_counters_inlined_state.js';
import { Migration20261129001000_drop_seen_feed_index } from './Migration20261129001000_drop_seen_feed_index.js';
import { Migration20261130000000_batch_item_charges } from './Migration20261130000000_batch_item_charges.js';

/** Migrations in order; listed explicitly so PostgreSQL and the embedded PGlite run the same ones from source. */
export const migrationsList = [
  { name: 'Migration20261123000000_initial', class: Migration20261123000000_initial },
  { name: 'Migration20261123000100_property_records', class: Migration20261123000100_property_records },
  { name: 'Migration20261123000200_skip_trace', class: Migration20261123000200_skip_trace },
  { name: 'Migration20261124000000_address_identity', class: Migration20261124000000_address_identity },
  { name: 'Migration20261124000000_key_issuers', class: Migration20261124000000_key_issuers },
  { name: 'Migration20261125000000_listing_indexes', class: Migration20261125000000_listing_indexes },
  { name: 'Migration20261126000000_billing', class: Migration20261126000000_billing },
  { name: 'Migration20261127000000_counter_deletes', class: Migration20261127000000_counter_deletes },
  { name: 'Migration20261128000000_notification_inserted_xid', class: Migration20261128000000_notification_inserted_xid },
  { name: 'Migration20261128000300_answer_carriers', class: Migration20261128000300_answer_carriers },
  { name: 'Migration20261129000000_list_usage', class: Migration20261129000000_list_usage },
  { name: 'Migration20261129000100_skip_trace_jobs', class: Migration20261129000100_skip_trace_jobs },
  { name: 'Migration20261129000200_webhooks', class: Migration20261129000200_webhooks },
  { name: 'Migration20261129000300_notification_archive', class: Migration20261129000300_notification_archive },
  { name: 'Migration20261129000400_read_marks', class: Migration20261129000400_read_marks },
  { name: 'Migration20261129000500_notification_expiry', class: Migration20261129000500_notification_expiry },
  { name: 'Migration20261129000600_mark_all_expired', class: Migration20261129000600_mark_all_expired },
  { name: 'Migration20261129000700_sweep_by_user', class: Migration20261129000700_sweep_by_user },
  { name: 'Migration20261129000800_seen_states_inlined', class: Migration20261129000800_seen_states_inlined },
  { name: 'Migration20261129000900_counters_inlined_state', class: Migration20261129000900_counters_inlined_state },
  { name: 'Migration20261129001000_drop_seen_feed_index', class: Migration20261129001000_drop_seen_feed_index },
  { name: 'Migration20261130000000_batch_item_charges', class: Migration20261130000000_batch_item_charges },
];
