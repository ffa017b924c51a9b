// zlib (zlib1g-dev): inflating the gzip-compressed contents of KeePass's KDBX files.
#include <zlib.h>
