/** Correctness checks of a run, beyond the pre-flight agreement of the servers (`verifyScenario`). */
import pg from 'pg';
import type { Fixture } from '../scenarios.js';

export interface CountCheck {
  exact: number;
  checked: number;
  /** One line for the log and the report. */
  summary: string;
}

/** The service's counts against count(*) over the rows themselves, for the heavy user and a sample. */
export async function checkCounts(url: string, serviceUrl: string, f: Fixture): Promise<CountCheck> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const users = [{ userId: f.heavy.userId, key: f.heavy.keys[0] }, ...f.typical.slice(0, 99)];
    let exact = 0;
    let checked = 0;
    for (const u of users) {
      for (const type of [null, 'task_due_soon']) {
        const res = await fetch(`${serviceUrl}/api/v1/call`, {
          method: 'POST',
          headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ operationId: 'getNotificationCounts', variables: type ? { notificationTypeFilter: type } : {} }),
        });
        type TypeCounts = { notificationType: string; unreadCount: number; readCount: number };
        const { data } = (await res.json()) as { data: { unreadCount: number; readCount: number; byType: TypeCounts[] } };
        const { rows } = await client.query<TypeCounts>(
          `select notification_type as "notificationType", count(*) filter (where not is_seen)::int as "unreadCount",
                  count(*) filter (where is_seen)::int as "readCount"
             from notification_states() where archived_at is null and user_id = $1 and ($2::text is null or notification_type = $2)
            group by notification_type order by notification_type`,
          [u.userId, type],
        );
        const sum = (key: 'unreadCount' | 'readCount') => rows.reduce((a, r) => a + r[key], 0);
        checked++;
        if (
          data.unreadCount === sum('unreadCount') &&
          data.readCount === sum('readCount') &&
          data.byType.length === rows.length &&
          data.byType.every(
            (t, i) =>
              t.notificationType === rows[i].notificationType && t.unreadCount === rows[i].unreadCount && t.readCount === rows[i].readCount,
          )
        )
          exact++;
      }
    }
    const summary = `${exact}/${checked} exact (totals and byType; heavy user and ${users.length - 1} others, with and without a type filter, after the write scenarios)`;
    return { exact, checked, summary };
  } finally {
    await client.end();
  }
}

/**
 * Ends what a load generator gave up on: a request that timed out (the naive floor's markAll) keeps
 * running and locking rows in PostgreSQL, and would be measured as the next server's time. Statements
 * still running `graceSeconds` after the load stopped are cancelled; returns how many.
 */
export async function cancelAbandonedStatements(url: string, graceSeconds = 5): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const busy = `from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
    and backend_type = 'client backend' and state = 'active' and now() - query_start > interval '1 second'`;
  try {
    for (let waited = 0; waited < graceSeconds * 1000; waited += 200) {
      const { rows } = await client.query<{ n: number }>(`select count(*)::int as n ${busy}`);
      if (rows[0].n === 0) return 0;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const { rows } = await client.query<{ n: number }>(`select count(pg_cancel_backend(pid))::int as n ${busy}`);
    return rows[0].n;
  } finally {
    await client.end();
  }
}
