import type { Em } from '../../infra/database/orm.js';
import { AppError, badInput } from '../../common/errors.js';
import { getOrganization } from '../../organizations/organizations.service.js';

/** `organizations.skip_trace_credits` is a PostgreSQL integer. */
export const MAX_CREDIT_BALANCE = 2_147_483_647;

/**
 * The only writer of `organizations.skip_trace_credits`. Every change is a ledger row plus a
 * conditional update of the balance in one transaction, so the balance never goes below zero
 * and always equals the sum of the ledger.
 */
export const creditLedger = {
  /**
   * A purchase. A `reference` already applied to this organization is not applied again: repeated
   * with the same amount it changes nothing, with another amount it is a CONFLICT (a reused
   * reference, not a retry). A purchase that would take the balance past MAX_CREDIT_BALANCE is
   * refused whole. Concurrent calls serialize on the unique reference and on the balance row.
   */
  async addCredits(em: Em, organizationId: string, amount: number, reference: string) {
    if (!Number.isInteger(amount) || amount < 1) throw badInput('amount must be a positive integer.', [{ path: 'amount', message: 'must be at least 1' }]);
    if (!reference.trim() || reference.length > 200) throw badInput('reference must be 1 to 200 characters.', [{ path: 'reference', message: 'must be 1 to 200 characters' }]);
    const organization = await getOrganization(em, organizationId);
    await em.transactional(async (tx) => {
      const inserted = await tx.execute<{ id: string }[]>(
        `insert into skip_trace_credit_ledger (id, organization_id, kind, amount, reference) values (?, ?, 'purchase', ?, ?)
         on conflict (organization_id, reference) where kind = 'purchase' do nothing returning id`,
        [crypto.randomUUID(), organizationId, amount, reference],
      );
      if (!inserted.length) {
        const [applied] = await tx.execute<{ amount: number }[]>(
          `select amount from skip_trace_credit_ledger where organization_id = ? and reference = ? and kind = 'purchase'`,
          [organizationId, reference],
        );
        if (Number(applied.amount) !== amount) {
          throw new AppError('conflict', `reference was already applied to this organization with amount ${applied.amount}.`, [
            { path: 'reference', message: 'was already used for a purchase of another amount' },
          ]);
        }
        return;
      }
      // The condition, not a prior read, guards the limit: it is evaluated on the locked row.
      const result = await tx.execute<{ affectedRows: number }>(
        `update organizations set skip_trace_credits = skip_trace_credits + ? where id = ? and skip_trace_credits <= ?`,
        [amount, organizationId, MAX_CREDIT_BALANCE - amount],
        'run',
      );
      if (result.affectedRows !== 1) {
        throw badInput(`The balance may not exceed ${MAX_CREDIT_BALANCE} credits.`, [{ path: 'amount', message: `would take the balance past ${MAX_CREDIT_BALANCE}` }]);
      }
    });
    // Re-read through the same EntityManager (a fork would need a second connection, which the
    // embedded database does not have while a transaction is open).
    await em.refresh(organization);
    return organization;
  },

  /**
   * One credit for one completed trace, inside the caller's transaction. The conditional update
   * is the guard: when concurrent charges race for the last credit, exactly one wins.
   */
  async charge(tx: Em, organizationId: string, requestId: string): Promise<void> {
    const result = await tx.execute<{ affectedRows: number }>(
      `update organizations set skip_trace_credits = skip_trace_credits - 1 where id = ? and skip_trace_credits > 0`,
      [organizationId],
      'run',
    );
    if (result.affectedRows !== 1) throw new AppError('insufficient_credits', 'The organization has no skip trace credits left.');
    await tx.execute(`insert into skip_trace_credit_ledger (id, organization_id, kind, amount, request_id) values (?, ?, 'charge', -1, ?)`, [
      crypto.randomUUID(),
      organizationId,
      requestId,
    ]);
  },

  /**
   * Undoes the charge of a trace whose response never reached its caller: the charge row is
   * removed, the credit returned and the audit row marked uncharged, in one transaction. Runs at
   * most once per request id (only an existing charge row is reversed).
   */
  async reverseCharge(em: Em, organizationId: string, requestId: string, outcome: string): Promise<void> {
    await em.transactional(async (tx) => {
      const removed = await tx.execute<{ id: string }[]>(`delete from skip_trace_credit_ledger where request_id = ? and kind = 'charge' returning id`, [requestId]);
      if (removed.length === 0) return;
      await tx.execute(`update organizations set skip_trace_credits = skip_trace_credits + 1 where id = ?`, [organizationId], 'run');
      await tx.execute(`update skip_trace_requests set charged = false, outcome = ? where id = ?`, [outcome, requestId], 'run');
    });
  },
};
