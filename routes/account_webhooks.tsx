import type { Context } from "hono";
import type { App, AppEnv } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import type { SessionForm } from "./session.ts";
import { CopyField } from "./pages/layout.tsx";
import { rotateWebhookSecret } from "../services/screenshots/webhooks.ts";
import type { webhookAccount } from "./screenshot_jobs.ts";

/**
 * The account page's webhook section (issue #50): the secret asynchronous captures'
 * webhooks are signed with, how to check a call, the latest tries, and a form that
 * makes a new secret.
 */
export function WebhookSection(props: {
  csrfToken: string;
  account: Awaited<ReturnType<typeof webhookAccount>>;
}) {
  const { account } = props;
  return (
    <section aria-labelledby="webhooks">
      <h2 id="webhooks">Webhooks</h2>
      <p>
        A capture sent with <code>webhook_url</code>{" "}
        calls that address when it ends, signed with this secret in{" "}
        <code>{account.signature_header}</code>:{" "}
        <code>t=&lt;unix seconds&gt;,v1=&lt;hex&gt;</code>, where v1 is
        HMAC-SHA256 of <code>&lt;t&gt;.&lt;body&gt;</code>.
      </p>
      <CopyField
        id="webhook-secret"
        label="Webhook secret"
        value={account.secret}
      />
      <form method="post" action="/account/webhook/secret" class="toolbar">
        <input type="hidden" name="_csrf" value={props.csrfToken} />
        <button type="submit" class="secondary">Make a new secret</button>
      </form>
      <h3>Latest deliveries</h3>
      {account.deliveries.length === 0
        ? <p class="muted">None yet.</p>
        : (
          <div class="table-wrap">
            <table class="stack">
              <thead>
                <tr>
                  <th>When</th>
                  <th>Address</th>
                  <th>Try</th>
                  <th>Answer</th>
                </tr>
              </thead>
              <tbody>
                {account.deliveries.map((d) => (
                  <tr>
                    <td data-label="When">
                      <time datetime={d.at}>
                        {d.at.slice(0, 19).replace("T", " ")} UTC
                      </time>
                    </td>
                    <td data-label="Address">
                      <code>{d.url}</code>
                    </td>
                    <td data-label="Try">{d.attempt}</td>
                    <td data-label="Answer">
                      {d.ok ? `delivered (${d.status_code})` : d.error}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
    </section>
  );
}

/** POST /account/webhook/secret: a new secret, then back to the account page. */
export function registerAccountWebhooks(
  app: App,
  deps: AppDeps,
  requireSessionForm: (c: Context<AppEnv>) => Promise<SessionForm | Response>,
) {
  app.post("/account/webhook/secret", async (c) => {
    const r = await requireSessionForm(c);
    if (r instanceof Response) return r;
    await rotateWebhookSecret(deps.database.db, r.user.userId);
    return c.redirect("/account?done=webhook#webhooks", 303);
  });
}
