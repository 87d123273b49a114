/**
 * An organization's skip trace account: whether its plan permits skip tracing
 * (`organizations.skip_trace_enabled`), its balance (`organizations.skip_trace_credits`) and the
 * credit ledger (`skip_trace_credit_ledger`). This module is the only reader and writer of those
 * columns and that table.
 *
 * The trace's check and its charge are hot paths, on raw SQL: this module's parts of the trace's
 * two statements (ACCOUNT_ROW, chargeCtes; composed in ../trace.data.ts). Switching the feature is admin
 * CRUD, through the Organization entity. A purchase is raw SQL inside an ORM transaction: every
 * change of the balance is a ledger row plus a conditional update of the balance in one
 * transaction, so the balance never goes below zero and always equals the sum of the ledger.
 */
import type { Organization } from '../organizations/organization.entity.js';
import type { Em } from '../infra/database/orm.js';
import type { Sql } from '../infra/database/sql.js';
import { AppError, badInput } from '../common/errors.js';
import { getOrganization } from '../organizations/organizations.service.js';

/** `organizations.skip_trace_credits` is a PostgreSQL integer. */
const MAX_CREDIT_BALANCE = 2_147_483_647;

const noCreditsLeft = () => new AppError('insufficient_credits', 'The organization has no skip trace credits left.');

/** The organization's skip trace columns; a statement of its own or a trace's subquery (trace.data.ts). `?`: the organization. */
export const ACCOUNT_ROW = `select skip_trace_enabled, skip_trace_credits from organizations where id = ?`;

/**
 * A trace's charge, as CTEs of the trace's one statement (../trace.data.ts): `charged` holds the
 * organization's id and its balance after the charge, or no row when no credit was left (or
 * `gate`, a CTE name, held no row); `ledger` writes the charge's ledger row with it. The
 * conditional update is the guard: when concurrent charges race for the last credit, exactly one
 * wins. `?`: the organization, then the request id.
 */
export const chargeCtes = (gate: string | null) =>
  `charged as (${takeOneCredit(gate ? ` and exists (select from ${gate})` : '')}),
   ledger as (insert into skip_trace_credit_ledger (id, organization_id, kind, amount, request_id)
     select gen_random_uuid(), id, 'charge', -1, ?::uuid from charged)`;
function takeOneCredit(condition: string) {
  return `update organizations set skip_trace_credits = skip_trace_credits - 1 where id = ? and skip_trace_credits > 0${condition} returning id, skip_trace_credits`;
}

/**
 * The reversal of a trace's charge, as CTEs of the refund's one statement (../trace.data.ts):
 * `removed` deletes the request's ledger charge (no row when there is none: never made, or
 * already refunded, so a charge is refunded at most once; nor when `gate`, a CTE name, holds no
 * row), and only then is the credit returned. `?`: the request id, then the organization.
 */
export const refundCtes = (gate: string | null) =>
  `removed as (delete from skip_trace_credit_ledger where request_id = ?::uuid and kind = 'charge'${gate ? ` and exists (select from ${gate})` : ''} returning id),
   refunded as (${giveOneCredit(' and exists (select from removed)')})`;
function giveOneCredit(condition: string) {
  return `update organizations set skip_trace_credits = skip_trace_credits + 1 where id = ?${condition}`;
}

export interface SkipTraceAccount {
  enabled: boolean;
  credits: number;
}

export const skipTraceAccount = {
  /** Whether the organization's plan permits skip tracing, and its balance; null for an unknown organization. */
  async read(sql: Sql, organizationId: string): Promise<SkipTraceAccount | null> {
    const [account] = await sql.execute<{ skip_trace_enabled: boolean; skip_trace_credits: number }[]>(ACCOUNT_ROW, [organizationId]);
    return skipTraceAccount.fromRow(account);
  },

  /** The account of an ACCOUNT_ROW row (null for none). */
  fromRow(row: { skip_trace_enabled: boolean; skip_trace_credits: number } | undefined): SkipTraceAccount | null {
    return row ? { enabled: row.skip_trace_enabled, credits: Number(row.skip_trace_credits) } : null;
  },

  /**
   * Whether the organization may start a trace now: its plan permits skip tracing (else 403
   * feature_unavailable), and it has a credit left (else 402 insufficient_credits). The charge
   * checks the balance again, on the locked row.
   */
  ensureCanTrace(account: SkipTraceAccount | null): void {
    if (!account?.enabled) throw new AppError('feature_unavailable', 'Skip tracing is not available for this organization.');
    if (account.credits <= 0) throw noCreditsLeft();
  },

  /** The error of a charge that found no credit left. */
  noCreditsLeft,

  /** Whether the organization's plan permits skip tracing. */
  async setEnabled(em: Em, organizationId: string, enabled: boolean): Promise<Organization> {
    const organization = await getOrganization(em, organizationId);
    organization.skipTraceEnabled = enabled;
    await em.flush();
    return organization;
  },

  /**
   * A purchase. A `reference` already applied to this organization is not applied again: repeated
   * with the same amount it changes nothing, with another amount it is a CONFLICT (a reused
   * reference, not a retry). A purchase that would take the balance past MAX_CREDIT_BALANCE is
   * refused whole. Concurrent calls serialize on the unique reference and on the balance row.
   */
  async addCredits(em: Em, organizationId: string, amount: number, reference: string) {
    if (!Number.isInteger(amount) || amount < 1)
      throw badInput('amount must be a positive integer.', [{ path: 'amount', message: 'must be at least 1' }]);
    if (!reference.trim() || reference.length > 200)
      throw badInput('reference must be 1 to 200 characters.', [{ path: 'reference', message: 'must be 1 to 200 characters' }]);
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
        throw badInput(`The balance may not exceed ${MAX_CREDIT_BALANCE} credits.`, [
          { path: 'amount', message: `would take the balance past ${MAX_CREDIT_BALANCE}` },
        ]);
      }
    });
    // Re-read through the same EntityManager (a fork would need a second connection, which the
    // embedded database does not have while a transaction is open).
    await em.refresh(organization);
    return organization;
  },
};
