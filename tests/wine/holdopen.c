/* A Windows program that holds a file open and shares nothing with anyone (no
 * FILE_SHARE_READ, _WRITE or _DELETE), as an editor or a virus scanner can: tests/wine.rs's
 * sharing-violation test. Test environment only, like bcryptprimitives.c (README.md).
 *
 *   holdopen FILE READY RELEASE
 *
 * Opens FILE, creates READY once it holds it, and closes it when RELEASE exists. */
#include <windows.h>

int wmain(int argc, wchar_t **argv) {
  if (argc != 4) return 2;
  HANDLE held = CreateFileW(argv[1], GENERIC_READ | GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
                            FILE_ATTRIBUTE_NORMAL, NULL);
  if (held == INVALID_HANDLE_VALUE) return 3;
  HANDLE ready = CreateFileW(argv[2], GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
  if (ready == INVALID_HANDLE_VALUE) return 4;
  CloseHandle(ready);
  /* A poll of the test's signal, not a wait for time to pass. */
  while (GetFileAttributesW(argv[3]) == INVALID_FILE_ATTRIBUTES) Sleep(20);
  CloseHandle(held);
  return 0;
}
