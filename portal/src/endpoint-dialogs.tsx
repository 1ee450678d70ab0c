// The endpoint's page, its two confirmations: deleting the endpoint, and rotating its secret.
import { call, type Webhook } from './api';
import type { Act } from './endpoint-actions';
import { navigate, paths } from './router';
import { Dialog } from './ui';

interface DialogProps {
  webhook: Webhook;
  open: boolean;
  onClose: () => void;
}

/**
 * "Delete this endpoint?": its Delete button deletes it, and the page goes to the list, which says
 * so; a refusal goes to `failed`.
 */
export function DeleteDialog({ webhook, open, onClose, failed }: DialogProps & { failed: (err: unknown) => void }) {
  return (
    <Dialog title="Delete this endpoint?" open={open} onClose={onClose}>
      <p>
        <span class="url">{webhook.url}</span> will receive no more events. Its deliveries so far are kept.
      </p>
      <div class="actions">
        <button type="button" data-initial onClick={onClose}>
          Cancel
        </button>
        <button
          type="button"
          class="danger"
          onClick={async () => {
            try {
              await call('DELETE', 'webhook', { query: { webhook_id: webhook.webhook_id } });
              onClose();
              navigate(paths.endpoints, `Endpoint deleted: ${webhook.url}`);
            } catch (err) {
              onClose();
              failed(err);
            }
          }}
        >
          Delete
        </button>
      </div>
    </Dialog>
  );
}

/** "Rotate the signing secret?": its Rotate button rotates it, and `rotated` gets the new one. */
export function RotateDialog({
  webhook,
  open,
  onClose,
  act,
  rotated,
}: DialogProps & { act: Act; rotated: (secret: string) => void }) {
  return (
    <Dialog title="Rotate the signing secret?" open={open} onClose={onClose}>
      <p>
        A new secret signs every request from now on. The previous one keeps signing too, for 24 hours, so your receiver
        can switch without losing a delivery.
      </p>
      <div class="actions">
        <button type="button" data-initial onClick={onClose}>
          Cancel
        </button>
        <button
          type="button"
          class="primary"
          onClick={async () => {
            onClose();
            await act(async () => {
              const value = await call<{ secret: string }>('POST', 'webhook/secret', {
                body: { webhook_id: webhook.webhook_id },
              });
              rotated(value.secret);
              return 'Secret rotated.';
            });
          }}
        >
          Rotate
        </button>
      </div>
    </Dialog>
  );
}
