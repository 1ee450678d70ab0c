// The endpoint's page, its controls: Disable/Enable, Edit, Delete, Show secret, Rotate secret (the
// test event and recovery forms are below them: endpoint-tools). A read-only link shows none of them: a read-only token may
// change nothing, nor read the signing secret (whoever holds it can sign as the service).
import { useState } from 'hono/jsx/dom';
import { call, type Webhook } from './api';
import { DeleteDialog, RotateDialog } from './endpoint-dialogs';
import { Secret } from './ui';

/** Runs a change; its outcome (a sentence, or the failure) is announced on the page. */
export type Act = (what: () => Promise<string>) => Promise<void>;

/** The outcome of the page's last action: its notice, its failure, and `act`, which runs one. */
export function useActions() {
  const [notice, setNotice] = useState('');
  const [actionError, setActionError] = useState<unknown>(null);
  const act: Act = async (what) => {
    setActionError(null);
    setNotice('');
    try {
      setNotice(await what());
    } catch (err) {
      setActionError(err);
    }
  };
  return { notice, setNotice, actionError, setActionError, act };
}

interface ActionsProps {
  webhook: Webhook;
  act: Act;
  /** The webhook as it stands after a change. */
  changed: (webhook: Webhook) => void;
  editing: boolean;
  edit: () => void;
  failed: (err: unknown) => void;
}

export function EndpointActions({ webhook, act, changed, editing, edit, failed }: ActionsProps) {
  const [dialog, setDialog] = useState<'delete' | 'rotate' | null>(null);
  const [secret, setSecret] = useState<{ value: string; rotated: boolean } | null>(null);
  const id = webhook.webhook_id;

  const setEnabled = (enabled: boolean) =>
    act(async () => {
      await call('PUT', 'webhook', { body: { webhook_id: id, is_enabled: enabled } });
      // Read again: PUT answers no webhook, and the state comes with why and since when.
      changed(await call<Webhook>('GET', 'webhook', { query: { webhook_id: id } }));
      return enabled ? 'Enabled: the endpoint receives events again.' : 'Disabled: the endpoint receives no events.';
    });

  const toggleSecret = () =>
    secret !== null
      ? setSecret(null)
      : act(async () => {
          const value = await call<{ secret: string }>('GET', 'webhook/secret', { query: { webhook_id: id } });
          setSecret({ value: value.secret, rotated: false });
          return '';
        });

  return (
    <section aria-label="Actions" class="panel actions-panel">
      <div class="actions">
        <button type="button" onClick={() => setEnabled(!webhook.is_enabled)}>
          {webhook.is_enabled ? 'Disable' : 'Enable'}
        </button>
        <button type="button" onClick={edit} disabled={editing}>
          Edit
        </button>
        <button type="button" class="danger" onClick={() => setDialog('delete')}>
          Delete
        </button>
        <button type="button" aria-expanded={secret !== null && !secret.rotated} onClick={toggleSecret}>
          {secret !== null ? 'Hide secret' : 'Show secret'}
        </button>
        <button type="button" onClick={() => setDialog('rotate')}>
          Rotate secret
        </button>
      </div>
      {secret !== null ? (
        <div class="secret-box">
          <p>{secret.rotated ? 'The new signing secret:' : 'The signing secret:'}</p>
          <Secret value={secret.value} />
          {secret.rotated ? (
            <p class="note">
              The previous secret keeps signing for 24 hours: until then every request carries both signatures, so your
              receiver can switch to the new secret without losing a delivery.
            </p>
          ) : null}
        </div>
      ) : null}
      <DeleteDialog webhook={webhook} open={dialog === 'delete'} onClose={() => setDialog(null)} failed={failed} />
      <RotateDialog
        webhook={webhook}
        open={dialog === 'rotate'}
        onClose={() => setDialog(null)}
        act={act}
        rotated={(value) => setSecret({ value, rotated: true })}
      />
    </section>
  );
}
