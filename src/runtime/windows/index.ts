/**
 * Windows workload identity for the simulated runtime: one import for the wiring code.
 *
 * - Dockershim layer: `CredentialSpecHandoff` (file or registry transport, cleanup, sweep).
 * - Backend: `credentialSpecFromSecurityOptions` (moby's rules), `parseCredentialSpec`
 *   (schema-checked document), OCI options (`withWindowsCredentialSpec`, `withWindowsUsername`,
 *   `withHostProcessAnnotation`, `checkHostProcessAgreement`).
 * - Node and AD: `openNodeDirectory`, `NodeDirectory`.
 * - Identity: `evaluateContainerIdentity` (strict/realistic), identity commands for the emulator
 *   (`registerIdentityCommands`, `runIdentityCommand`, `runIdentityCommandLine`).
 */
export * from './container-identity.js';
export * from './credential-spec.js';
export * from './credential-spec-handoff.js';
export * from './identity-command-registration.js';
export * from './identity-commands.js';
export * from './node-directory.js';
export * from './oci-windows.js';
export * from './security-options.js';
export * from './simulated-registry.js';
export * from './windows-runtime.js';
export * from './windows-status.js';
