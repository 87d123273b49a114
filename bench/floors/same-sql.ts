/**
 * The same-SQL floor: the service's REST routes done by hand (`../lib/floor-kit.ts`), sending
 * exactly the statements the service sends now, the same way (checked against PostgreSQL's
 * statement log), in the same order and with the same concurrency. When the service's statements
 * change, this file changes with them; `naive.ts` stays as the service was.
 *
 * The gateway is still the naive floor's; the skip trace is `same-sql-skip-trace.ts`.
 */
import type { FloorRoutes } from '../lib/floor-kit.js';
import { naiveFloor } from './naive.js';
import { skipTrace } from './same-sql-skip-trace.js';

export const sameSqlFloor: FloorRoutes = { gateway: naiveFloor.gateway, skipTrace };
