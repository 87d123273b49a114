import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from '../schema/builder.js';
import '../schema/scalars.js';
import '../organizations/organizations.schema.js';
import '../auth/auth.schema.js';
import '../auth/viewer.schema.js';
import '../notifications/notifications.schema.js';
import '../notifications/notification-events.schema.js';
import '../skip-trace/skip-trace.schema.js';
import '../skip-trace/items/item.schema.js';
import '../skip-trace/batch/batch.schema.js';
import '../skip-trace/jobs/jobs.schema.js';
import '../billing/billing.schema.js';
import '../property-records/property-records.schema.js';
import '../webhooks/webhooks.schema.js';

/** The one schema: the gateway, the REST routes and internal tools all run against it. */
export const schema = builder.toSchema({ sortSchema: true });

/** The SDL checked in as `schema.graphql` and served at `GET /schema.graphql`. */
export const printedSchema = `${printSchema(lexicographicSortSchema(schema))}\n`;
