/**
 * Entry of the browser global build (service-sdk.min.js): exposes `ServiceApp` on window and
 * remembers the origin the script was loaded from as the default service address.
 */
import { ServiceApp, setScriptOrigin } from "./service_app.ts";
import { ServiceError } from "./errors.ts";

const script = typeof document !== "undefined"
  ? document.currentScript as HTMLScriptElement | null
  : null;
if (script?.src) setScriptOrigin(new URL(script.src).origin);

const g = globalThis as unknown as Record<string, unknown>;
g.ServiceApp = ServiceApp;
g.ServiceError = ServiceError;
