// Durable Objects: a call to an object is one storage operation of the request. Whatever makes it
// fail (the object overloaded, reset, or its storage full) is a StorageFailure worth trying again
// shortly: an HTTP reply says 503 with Retry-After, a queue message comes back later.
import { StorageFailure } from '../core/errors';

export async function inObject<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw new StorageFailure('storage unavailable', true, err);
  }
}
