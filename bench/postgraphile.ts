/**
 * The peer: PostGraphile v5 with the amber preset, serving the bench database's own tables.
 *
 * The feed query is `allNotifications(condition: {userId}, orderBy: [CREATED_AT_DESC, ID_DESC],
 * first: 25) { nodes {…} totalCount pageInfo {…} }`. So that it does the same work as the
 * service per request, the context callback looks the caller's gateway key up with the service's
 * SQL and refuses a `userId` that is not the key's owner. Everything else is PostGraphile as it
 * ships: its own planner (grafast), SQL and JSON.
 *
 * Env: DATABASE_URL, PORT, DATABASE_POOL_MAX (10, as the service).
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';
import { postgraphile } from 'postgraphile';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/node';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';

const env = process.env;
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.DATABASE_POOL_MAX ?? 10) });

/** The gateway key's owner, by the service's own lookup statement; null when the key is not valid. */
async function keyOwner(authorization: string | undefined): Promise<string | null> {
  const token = /^Bearer[ ]+(gk_[0-9A-Za-z]{40})\s*$/.exec(authorization ?? '')?.[1];
  if (!token) return null;
  const hash = createHash('sha256').update(token).digest('hex');
  const { rows } = await pool.query(`select k.id, k.key_hash, k.scopes, u.id as user_id, u.organization_id, u.role
             from api_keys k join users u on u.id = k.user_id
            where k.key_hash = '${hash}' and k.revoked_at is null`);
  return (rows[0]?.user_id as string | undefined) ?? null;
}

const preset: GraphileConfig.Preset = {
  extends: [PostGraphileAmberPreset],
  pgServices: [makePgService({ pool, schemas: ['public'] })],
  grafserv: { port: Number(env.PORT ?? 4002), graphiql: false, watch: false },
  grafast: {
    explain: false,
    async context(requestContext, args) {
      const owner = await keyOwner(requestContext.node?.req.headers.authorization);
      const asked = (args.variableValues as Record<string, unknown> | undefined)?.userId;
      if (!owner || (asked !== undefined && asked !== owner)) throw new Error('invalid_key');
      return {};
    },
  },
};

const pgl = postgraphile(preset);
const serv = pgl.createServ(grafserv);
const handler = serv.createHandler();
const server = createServer((req, res) => {
  // A readiness probe for the harness, outside GraphQL.
  if (req.url === '/readyz') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ready"}');
  handler(req, res);
});
server.keepAliveTimeout = 72_000;
await serv.ready();
server.listen(Number(env.PORT ?? 4002), '127.0.0.1');

const shutdown = () => server.close(() => void Promise.resolve(pgl.release()).finally(() => process.exit(0)));
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
