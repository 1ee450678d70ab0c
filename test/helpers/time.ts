// Instants relative to now, as the tables store them (ISO 8601, UTC).
export const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();
export const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
export const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString();
