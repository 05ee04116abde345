import type { OpenAPIHono } from "@hono/zod-openapi";

/** Variables routes share through the Hono context. */
export type AppEnv = {
  Variables: {
    requestId: string;
    userId: string;
    apiKeyId: string;
    /** Set for a guest's upload (GUEST_UPLOADS=on): the GUEST_* limits apply. */
    guest?: boolean;
    /** Set on /api/1/admin/… and /admin once the caller is known to be an admin. */
    admin?: { id: string; email: string };
  };
};

/** The app type every route module registers on. */
export type App = OpenAPIHono<AppEnv>;
