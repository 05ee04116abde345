// The home page's uploader: the SDK's widget, inline, calling the API with the session
// (ServiceApp.forSession and the page's csrf-token), never with an API key.
const box = document.getElementById("uploader");
const token = document.querySelector('meta[name="csrf-token"]')?.content;
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
    title: "Drop, paste or pick images",
  });
}
