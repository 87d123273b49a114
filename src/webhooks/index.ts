/** What other domains use of webhooks: the URL check, the secret's presence, queued deliveries and their state. */
export { checkWebhookUrl, type Resolve, type WebhookUrlOptions } from './webhook-url.js';
export { ensureWebhookSecret } from './webhooks.service.js';
export { enqueueWebhook, webhookDeliveryInsert, webhookStateOf, type WebhookDelivery, type WebhookState } from './webhooks.data.js';
export { startWebhookWorker, MAX_WEBHOOK_ATTEMPTS, type WebhookWorker } from './webhook-worker.js';
