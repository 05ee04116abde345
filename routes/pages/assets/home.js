// The home page's uploader: the SDK's widget, inline, calling the API with the session
// (ServiceApp.forSession and the page's csrf-token), never with an API key. Signed out,
// with guest uploads on, it uploads as this browser's guest: every upload expires (at
// most data-guest seconds), and each shows its delete link.
const box = document.getElementById("uploader");
const guestLife = Number(box?.dataset.guest) || 0;
const token = document.querySelector('meta[name="csrf-token"]')?.content ??
  (guestLife ? "guest" : undefined);
if (box && token && globalThis.ServiceApp) {
  const app = globalThis.ServiceApp.forSession(token, {
    baseUrl: location.origin,
  });
  app.createUploadWidget({
    container: box,
    multiple: true,
    expirationChoices: true,
    urlImport: true,
    maxFileSize: Number(box.dataset.maxFileBytes) || undefined,
    maxFiles: Number(box.dataset.maxFiles) || undefined,
    resumableFromMB: Number(box.dataset.resumableFromMb ?? 0),
    maxResumableFileSize: Number(box.dataset.maxResumableBytes) || undefined,
    title: "Drop, paste or pick images",
    albums: box.dataset.albums ? JSON.parse(box.dataset.albums) : undefined,
    // Signed in, who can see an upload is picked before it is sent (a guest's are public).
    privacyChoices: !guestLife,
    // A private upload's preview from this address, where the session cookie goes.
    sameOrigin: true,
    ...(guestLife ? { maxExpiration: guestLife, deleteLinks: true } : {}),
  });
}
