// The events a webhook may subscribe to (the seed's table). The worker delivers whatever type a subscription
// names, so a new event needs only its recording (events/outbox.ts) and its name here.
export const WEBHOOK_EVENTS = ['box.uploaded', 'box.deleted', 'user.created'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
