import type { Em } from '../infra/database/orm.js';
import type { Db } from '../infra/database/sql.js';
import { activeApiKeyHints, createApiKey } from '../auth/api-keys.service.js';
import { PLATFORM_ISSUER } from '../schema/principal.js';
import { createOrganization, createUser, findFirstUserByEmail, findOrganization } from '../organizations/organizations.service.js';
import { markSeenAtCreation } from '../notifications/feed.data.js';
import { publishNotifications, type PublishNotificationInput } from '../notifications/feed.service.js';
import { skipTraceAccount } from '../billing/skip-trace-account.js';
import { activeSkipTraceKeyInfos, generateSkipTraceKey } from '../auth/skip-trace-keys/skip-trace-keys.service.js';
import { importPropertyRecords } from '../property-records/property-records.import.js';
import type { PropertyRecordInput } from '../property-records/property-records.validation.js';

export interface DemoSeed {
  organizationId: string;
  userId: string;
  gatewayKey: string;
  skipTraceKey: string;
}

/** The demo data found on a later start: ids, and the keys by hint only (they are stored hashed). */
export interface SeededDemo {
  organizationId: string;
  userId: string;
  /** Hints of the demo user's active gateway keys, newest first. */
  gatewayKeyHints: string[];
  skipTraceKeyHint: string | null;
}

const DEMO_ORGANIZATION_NAME = 'Demo Realty';
const DEMO_USER_EMAIL = 'demo@example.com';

/** Property records for the records provider; the README's examples trace these addresses. */
const DEMO_PROPERTIES: PropertyRecordInput[] = [
  {
    address: { line1: '123 Main St', line2: 'Apt 4', city: 'Austin', state: 'TX', zip: '78701' },
    owners: [
      {
        type: 'person',
        firstName: 'John',
        middleName: 'Q',
        lastName: 'Smith',
        age: 61,
        phones: [
          { number: '(512) 555-0100', type: 'mobile' },
          { number: '512-555-0101', type: 'residential' },
        ],
        emails: ['john.smith@example.com'],
      },
      { type: 'person', firstName: 'Jane', lastName: 'Smith', age: 58, phones: [{ number: '512.555.0102', type: 'mobile' }], emails: [] },
    ],
  },
  {
    address: { line1: '456 Oak Avenue', city: 'Austin', state: 'TX', zip: '78702' },
    owners: [
      {
        type: 'entity',
        name: 'Acme Holdings LLC',
        persons: [
          {
            firstName: 'Maria',
            lastName: 'Lopez',
            age: 44,
            phones: [{ number: '5125550103', type: 'mobile' }],
            emails: ['maria@acme.example'],
          },
        ],
      },
    ],
  },
  { address: { line1: '789 Pine Road', city: 'Round Rock', state: 'TX', zip: '78664' }, owners: [] },
];

const SAMPLES: Array<Omit<PublishNotificationInput, 'userId'>> = [
  {
    notificationType: 'deal_created',
    title: 'New deal: 123 Main St',
    body: 'A deal was created for 123 Main St, Austin TX.',
    dealId: 'deal_1001',
    actionType: 'open_deal',
    actionTargetId: 'deal_1001',
  },
  {
    notificationType: 'deal_stage_changed',
    title: 'Deal moved to Under Contract',
    body: '456 Oak Ave moved from Offer to Under Contract.',
    dealId: 'deal_1002',
    actionType: 'open_deal',
    actionTargetId: 'deal_1002',
  },
  {
    notificationType: 'contact_assigned',
    title: 'Contact assigned: Maria Lopez',
    body: 'Maria Lopez (seller lead) was assigned to you.',
    contactId: 'contact_2001',
    actionType: 'open_contact',
    actionTargetId: 'contact_2001',
  },
  {
    notificationType: 'note_mention',
    title: 'You were mentioned in a note',
    body: '@you please call the owner about the 50% deposit.',
    noteId: 'note_3001',
    dealId: 'deal_1001',
    actionType: 'open_note',
    actionTargetId: 'note_3001',
  },
  {
    notificationType: 'reply_received',
    title: 'Reply from John Smith',
    body: 'Yes, I am interested in selling. Call me after 5pm.',
    replyId: 'reply_4001',
    contactId: 'contact_2002',
    actionType: 'open_reply',
    actionTargetId: 'reply_4001',
  },
  {
    notificationType: 'task_due_soon',
    title: 'Task due soon: follow up',
    body: 'Follow up with the buyer_agent on the inspection report.',
    taskId: 'task_5001',
    actionType: 'open_task',
    actionTargetId: 'task_5001',
  },
  {
    notificationType: 'task_overdue',
    title: 'Task overdue: send offer',
    body: 'Send the offer for 789 Pine Rd.',
    taskId: 'task_5002',
    actionType: 'open_task',
    actionTargetId: 'task_5002',
  },
  {
    notificationType: 'call_missed',
    title: 'Missed call from (512) 555-0100',
    body: 'Missed call from a contact.',
    callId: 'call_6001',
    contactId: 'contact_2003',
    actionType: 'open_call',
    actionTargetId: 'call_6001',
  },
];

/**
 * Demo data for a first start on an empty embedded database: one org, an admin with a gateway key,
 * 40 notifications, a skip trace key with 100 credits and three property records.
 */
export async function seedDemo(em: Em, maxKeysPerUser: number): Promise<DemoSeed> {
  return em.transactional(async (tx) => {
    const organization = await createOrganization(tx, { name: DEMO_ORGANIZATION_NAME, skipTraceEnabled: true });
    const user = await createUser(tx, { organizationId: organization.id, email: DEMO_USER_EMAIL, name: 'Demo Admin', role: 'ADMIN' });
    const key = await createApiKey(tx, {
      userId: user.id,
      scopes: ['READ', 'WRITE', 'ADMIN'],
      issuer: PLATFORM_ISSUER,
      maxActiveKeys: maxKeysPerUser,
    });
    const start = Date.now() - 40 * 3600_000;
    const inputs = Array.from({ length: 40 }, (_, i) => ({
      ...SAMPLES[i % SAMPLES.length],
      userId: user.id,
      createdAt: new Date(start + i * 3600_000),
    }));
    const published = await publishNotifications(tx, inputs);
    // A third already read, so both badge numbers show.
    await markSeenAtCreation(
      tx,
      user.id,
      published.filter((_, i) => i % 3 === 0).map((n) => n.id),
    );
    await importPropertyRecords(tx, DEMO_PROPERTIES);
    const skipTraceKey = await generateSkipTraceKey(tx, organization.id, PLATFORM_ISSUER);
    await skipTraceAccount.addCredits(tx, organization.id, 100, 'demo-seed');
    return { organizationId: organization.id, userId: user.id, gatewayKey: key.secret, skipTraceKey: skipTraceKey.secret };
  });
}

/**
 * The demo data a first start seeded, found again on a later start (its user by email, in the demo
 * organization), or null when this database was never seeded or its demo user is gone.
 */
export async function findSeededDemo(em: Em, db: Db): Promise<SeededDemo | null> {
  const user = await findFirstUserByEmail(em, DEMO_USER_EMAIL);
  if (!user) return null;
  const organization = await findOrganization(em, user.organization.id);
  if (organization?.name !== DEMO_ORGANIZATION_NAME) return null;
  const skipTraceKey = (await activeSkipTraceKeyInfos(em, [organization.id])).get(organization.id);
  return {
    organizationId: organization.id,
    userId: user.id,
    gatewayKeyHints: await activeApiKeyHints(db, user.id),
    skipTraceKeyHint: skipTraceKey?.hint ?? null,
  };
}
