/**
 * With charge.ts, the only reader and writer of the account columns and the ledger. A purchase
 * updates both in one transaction, so the balance never goes below zero and equals the ledger's sum.
 */
import type { Organization } from '../organizations/organization.entity.js';
import type { Em } from '../infra/database/orm.js';
import { inUnitOfWork, sql, type Db, type Statement } from '../infra/database/sql.js';
import { AppError, badInput } from '../common/errors.js';
import { getOrganization } from '../organizations/organizations.service.js';

/** `organizations.skip_trace_credits` is a PostgreSQL integer. */
const MAX_CREDIT_BALANCE = 2_147_483_647;

const noCreditsLeft = () => new AppError('insufficient_credits', 'The organization has no skip trace credits left.');

/** Also a subquery of a trace's opening read, where `organizationId` may be an outer column. */
export const accountRow = (organizationId: string | Statement) =>
  sql`select skip_trace_enabled, skip_trace_credits from organizations where id = ${organizationId}`;

export interface AccountRow {
  skip_trace_enabled: boolean;
  skip_trace_credits: number;
}

export interface SkipTraceAccount {
  enabled: boolean;
  credits: number;
}

export const skipTraceAccount = {
  /** Null for an unknown organization. */
  async read(db: Db, organizationId: string): Promise<SkipTraceAccount | null> {
    const [account] = await db.rows<AccountRow>(accountRow(organizationId));
    return skipTraceAccount.fromRow(account);
  },

  fromRow(row: AccountRow | undefined): SkipTraceAccount | null {
    return row ? { enabled: row.skip_trace_enabled, credits: Number(row.skip_trace_credits) } : null;
  },

  /** An early refusal only: the charge checks the balance again, on the locked row. */
  ensureCanTrace(account: SkipTraceAccount | null): void {
    if (!account?.enabled) throw new AppError('feature_unavailable', 'Skip tracing is not available for this organization.');
    if (account.credits <= 0) throw noCreditsLeft();
  },

  noCreditsLeft,

  async setEnabled(em: Em, organizationId: string, enabled: boolean): Promise<Organization> {
    const organization = await getOrganization(em, organizationId);
    organization.skipTraceEnabled = enabled;
    await em.flush();
    return organization;
  },

  /**
   * A repeated `reference` with the same amount is a retry (no change); with another, a CONFLICT.
   * Concurrent calls serialize on the unique reference and on the balance row.
   */
  async addCredits(em: Em, organizationId: string, amount: number, reference: string) {
    if (!Number.isInteger(amount) || amount < 1)
      throw badInput('amount must be a positive integer.', [{ path: 'amount', message: 'must be at least 1' }]);
    if (!reference.trim() || reference.length > 200)
      throw badInput('reference must be 1 to 200 characters.', [{ path: 'reference', message: 'must be 1 to 200 characters' }]);
    const organization = await getOrganization(em, organizationId);
    await em.transactional((tx) => applyPurchase(tx, { organizationId, amount, reference }));
    // Not a fork: it would need a second connection, which the embedded database lacks mid-transaction.
    await em.refresh(organization);
    return organization;
  },
};

async function applyPurchase(tx: Em, purchase: { organizationId: string; amount: number; reference: string }): Promise<void> {
  const { organizationId, amount, reference } = purchase;
  const inserted = await inUnitOfWork<{ id: string }[]>(
    tx,
    sql`insert into skip_trace_credit_ledger (id, organization_id, kind, amount, reference) values (${crypto.randomUUID()}, ${organizationId}, 'purchase', ${amount}, ${reference})
       on conflict (organization_id, reference) where kind = 'purchase' do nothing returning id`,
  );
  if (!inserted.length) {
    const [applied] = await inUnitOfWork<{ amount: number }[]>(
      tx,
      sql`select amount from skip_trace_credit_ledger where organization_id = ${organizationId} and reference = ${reference} and kind = 'purchase'`,
    );
    if (Number(applied.amount) !== amount) {
      throw new AppError('conflict', `reference was already applied to this organization with amount ${applied.amount}.`, [
        { path: 'reference', message: 'was already used for a purchase of another amount' },
      ]);
    }
    return;
  }
  // The condition, not a prior read, guards the limit: it is evaluated on the locked row.
  const result = await inUnitOfWork<{ affectedRows: number }>(tx, addToBalance(organizationId, amount), 'run');
  if (result.affectedRows !== 1) {
    throw badInput(`The balance may not exceed ${MAX_CREDIT_BALANCE} credits.`, [
      { path: 'amount', message: `would take the balance past ${MAX_CREDIT_BALANCE}` },
    ]);
  }
}

const addToBalance = (organizationId: string, amount: number) =>
  sql`update organizations set skip_trace_credits = skip_trace_credits + ${amount} where id = ${organizationId} and skip_trace_credits <= ${MAX_CREDIT_BALANCE - amount}`;
