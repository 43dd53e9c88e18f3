/**
 * Windows error codes the simulated identity commands print (REFERENCE §9), in the forms the
 * real tools use: nltest prints Win32 codes (`Status = 1311 0x51f ERROR_NO_LOGON_SERVERS`),
 * klist prints NTSTATUS values (`klist failed with 0xc0000022/-1073741790: …`).
 */
/** A Win32 error code (winerror.h, lmerr.h) with its system message (FormatMessage, en-US), as cmd.exe prints it and .NET wraps it. */
export interface Win32Status {
  code: number;
  name: string;
  text: string;
}

export const NERR_SUCCESS: Win32Status = { code: 0, name: 'NERR_Success', text: 'The operation completed successfully.' };
export const ERROR_FILE_NOT_FOUND: Win32Status = { code: 2, name: 'ERROR_FILE_NOT_FOUND', text: 'The system cannot find the file specified.' };
export const ERROR_PATH_NOT_FOUND: Win32Status = { code: 3, name: 'ERROR_PATH_NOT_FOUND', text: 'The system cannot find the path specified.' };
export const ERROR_ACCESS_DENIED: Win32Status = { code: 5, name: 'ERROR_ACCESS_DENIED', text: 'Access is denied.' };
export const ERROR_BAD_NETPATH: Win32Status = { code: 53, name: 'ERROR_BAD_NETPATH', text: 'The network path was not found.' };
export const ERROR_BAD_NET_NAME: Win32Status = { code: 67, name: 'ERROR_BAD_NET_NAME', text: 'The network name cannot be found.' };
export const ERROR_NO_LOGON_SERVERS: Win32Status = {
  code: 1311,
  name: 'ERROR_NO_LOGON_SERVERS',
  text: 'There are currently no logon servers available to service the logon request.',
};
export const ERROR_NO_SUCH_DOMAIN: Win32Status = { code: 1355, name: 'ERROR_NO_SUCH_DOMAIN', text: 'The specified domain either does not exist or could not be contacted.' };
export const RPC_S_SERVER_UNAVAILABLE: Win32Status = { code: 1722, name: 'RPC_S_SERVER_UNAVAILABLE', text: 'The RPC server is unavailable.' };
export const ERROR_NO_TRUST_LSA_SECRET: Win32Status = { code: 1786, name: 'ERROR_NO_TRUST_LSA_SECRET', text: 'The workstation does not have a trust secret.' };
export const ERROR_NO_TRUST_SAM_ACCOUNT: Win32Status = {
  code: 1787,
  name: 'ERROR_NO_TRUST_SAM_ACCOUNT',
  text: 'The security database on the server does not have a computer account for this workstation trust relationship.',
};
export const ERROR_TRUSTED_RELATIONSHIP_FAILURE: Win32Status = {
  code: 1789,
  name: 'ERROR_TRUSTED_RELATIONSHIP_FAILURE',
  text: 'The trust relationship between this workstation and the primary domain failed.',
};

/** `1311 0x51f ERROR_NO_LOGON_SERVERS`, as nltest writes a status. */
export function formatWin32Status(status: Win32Status): string {
  return `${status.code} 0x${status.code.toString(16)} ${status.name}`;
}

export interface NtStatus {
  /** Unsigned 32-bit value. */
  value: number;
  name: string;
  text: string;
}

export const STATUS_ACCESS_DENIED: NtStatus = {
  value: 0xc0000022,
  name: 'STATUS_ACCESS_DENIED',
  text: '{Access Denied}\nA process has requested access to an object, but has not been granted those access rights.',
};
export const STATUS_NO_LOGON_SERVERS: NtStatus = {
  value: 0xc000005e,
  name: 'STATUS_NO_LOGON_SERVERS',
  text: 'There are currently no logon servers available to service the logon request.',
};
export const STATUS_NO_TRUST_LSA_SECRET: NtStatus = {
  value: 0xc000018a,
  name: 'STATUS_NO_TRUST_LSA_SECRET',
  text: 'The workstation does not have a trust secret.',
};
export const STATUS_NO_TRUST_SAM_ACCOUNT: NtStatus = {
  value: 0xc000018b,
  name: 'STATUS_NO_TRUST_SAM_ACCOUNT',
  text: 'The SAM database on the Windows Server does not have a computer account for this workstation trust relationship.',
};

/**
 * What the Kerberos package reports for KRB_AP_ERR_SKEW (the clocks differ by more than the
 * 5 minutes Kerberos allows); text of [MS-ERREF] 2.3.1.
 */
export const STATUS_TIME_DIFFERENCE_AT_DC: NtStatus = {
  value: 0xc0000133,
  name: 'STATUS_TIME_DIFFERENCE_AT_DC',
  text: 'The time at the primary domain controller is different from the time at the backup domain controller or member server by too large an amount.',
};

/** `0xc0000022/-1073741790`, as klist writes an NTSTATUS. */
export function formatNtStatus(status: NtStatus): string {
  return `0x${status.value.toString(16)}/${status.value | 0}`;
}

/** ERROR_LOGON_FAILURE (1326): the text Windows gives for an unknown run-as user. */
export const LOGON_FAILURE_TEXT = 'The user name or password is incorrect.';

/**
 * A CCG plugin failure surfaces from hcsshim as winapi error #3489792023 (0xD0020017, the
 * HRESULT of RPC_NT_SERVER_UNAVAILABLE 0xC0020017), with the event text below.
 */
export const CCG_WINAPI_ERROR = 3489792023;
export const CCG_EVENT_TEXT = 'The RPC server is unavailable. (0xC0020017)';
