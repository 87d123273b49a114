/** What other domains may use of webhooks. */
export { checkWebhookUrl, type Resolve, type WebhookUrlGuard, type WebhookUrlOptions } from './webhook-url.js';
export { ensureWebhookSecret } from './webhooks.service.js';
export { enqueueWebhook, webhookDeliveryInsert, webhookStateOf, type WebhookDelivery, type WebhookState } from './webhooks.data.js';
export { startWebhookWorker, MAX_WEBHOOK_ATTEMPTS, type WebhookWorker } from './webhook-worker.js';
