const TYPE = /^[A-Za-z0-9_.]{1,64}$/;

/** Whether `text` is an event type: 1 to 64 of A-Z a-z 0-9 _ . (webhooks subscribe to them, events carry one). */
export const isEventType = (text: unknown): text is string => typeof text === 'string' && TYPE.test(text);

/**
 * The operational event types: made by the service itself about an application's endpoints,
 * never published (a publisher's event of one of these types is refused).
 */
export const OPERATIONAL_TYPES = [
  'endpoint.disabled',
  'endpoint.failing',
  'endpoint.recovered',
  'delivery.exhausted',
  'secret.rotated',
] as const;
export type OperationalType = (typeof OPERATIONAL_TYPES)[number];

const operational = new Set<string>(OPERATIONAL_TYPES);
export const isOperationalType = (type: string): type is OperationalType => operational.has(type);
