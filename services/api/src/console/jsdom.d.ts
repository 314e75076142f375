// The part of jsdom the mail sanitizer uses: a window for DOMPurify. (@types/jsdom pulls the DOM
// library into every file of the program, which changes fetch's types for the whole repo.)
declare module "jsdom" {
  export class JSDOM {
    constructor(html?: string);
    readonly window: object;
  }
}
