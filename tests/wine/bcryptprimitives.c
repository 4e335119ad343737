/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8 lacks and Rust's standard
 * library imports (ProcessPrng, its random source). Test environment only (tests/wine.rs):
 * it is never part of filewatchd. ProcessPrng fills the buffer from RtlGenRandom. */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!RtlGenRandom(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
