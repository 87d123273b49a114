/**
 * The same-SQL floor: the service's REST routes done by hand (`../lib/floor-kit.ts`), sending
 * exactly the statements the service sends now, the same way (checked against PostgreSQL's
 * statement log), in the same order and with the same concurrency. When the service's statements
 * change, this file changes with them; `naive.ts` stays as the service was.
 *
 * For now every route is the naive floor's: the statements have not changed since it was frozen.
 */
import type { FloorRoutes } from '../lib/floor-kit.js';
import { naiveFloor } from './naive.js';

export const sameSqlFloor: FloorRoutes = naiveFloor;
