const TYPE = /^[A-Za-z0-9_.]{1,64}$/;

/** Whether `text` is an event type: 1 to 64 of A-Z a-z 0-9 _ . (webhooks subscribe to them, events carry one). */
export const isEventType = (text: unknown): text is string => typeof text === 'string' && TYPE.test(text);
