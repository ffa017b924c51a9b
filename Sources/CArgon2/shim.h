// libargon2 (libargon2-dev): Argon2d and Argon2id, the key derivations of KeePass's KDBX 4 files.
#include <argon2.h>
