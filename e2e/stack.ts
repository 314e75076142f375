// The in-process stack lives in @mailroom/stack (packages/stack), where the services' tests can
// import it too; e2e tests keep importing it from here.
export * from "@mailroom/stack";
