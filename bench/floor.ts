/**
 * A floor as a server: `FLOOR=naive` serves the naive floor (`floors/naive.ts`, frozen), anything
 * else the same-SQL floor (`floors/same-sql.ts`). See `lib/floor-kit.ts` for the environment.
 */
import { serveFloor } from './lib/floor-kit.js';
import { naiveFloor } from './floors/naive.js';
import { sameSqlFloor } from './floors/same-sql.js';

serveFloor(process.env.FLOOR === 'naive' ? naiveFloor : sameSqlFloor);
