import { Counter, Gauge, type Registry } from 'prom-client';
import { labelSets, startAtZero } from '../metric-series.js';
import { sql, type Db } from './sql.js';

export const FALLBACK_REASONS = ['behind_write', 'unreachable', 'read_failed'] as const;
export type FallbackReason = (typeof FALLBACK_REASONS)[number];

export interface ReplicaMetrics {
  served(reason: FallbackReason | null): void;
}

/** Counted per statement so the primary's count is the fallbacks' sum. The lag costs one primary query per scrape. */
export function createReplicaMetrics(registry: Registry, primary: Db, replayed: () => number | null): ReplicaMetrics {
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, label: L, values: readonly string[]) =>
    startAtZero(
      new Counter({ name, help, labelNames: [label], registers }),
      labelSets({ [label]: values } as Record<L, readonly string[]>),
    );
  const reads = counter(
    'crm_db_replica_routed_reads_total',
    'Read statements routed for the read replica, by the server that answered them (replica or primary).',
    'served_by',
    ['replica', 'primary'],
  );
  const fallbacks = counter(
    'crm_db_replica_fallbacks_total',
    'Routed reads answered by the primary, by reason (behind_write: the caller’s own write not replayed yet; unreachable: the replica not answering its polls; read_failed: the read failed or timed out on it).',
    'reason',
    FALLBACK_REASONS,
  );
  new Gauge({
    name: 'crm_db_replica_up',
    help: '1 while the read replica answers its replay-position polls, else 0 (reads then go to the primary).',
    registers,
    collect() {
      this.set(replayed() === null ? 0 : 1);
    },
  });
  new Gauge({
    name: 'crm_db_replica_replay_lag_bytes',
    help: 'WAL bytes the primary has written that the read replica has not replayed yet (absent while the replica does not answer).',
    registers,
    async collect() {
      this.reset();
      const position = await primary.rows<{ lsn: string }>(sql`select (pg_current_wal_lsn() - '0/0')::text as lsn`).then(
        ([row]) => Number(row.lsn),
        () => null,
      );
      const at = replayed();
      if (position !== null && at !== null) this.set(Math.max(0, position - at));
    },
  });
  return {
    served(reason) {
      reads.inc({ served_by: reason === null ? 'replica' : 'primary' });
      if (reason !== null) fallbacks.inc({ reason });
    },
  };
}
