export { poisonMessage } from "@mailroom/testing";
