// libxml2 (libxml2-dev): its streaming reader, for the XML of KeePass's KDBX files (KeePassFormat).
#include <libxml/xmlversion.h>
// Debian builds libxml2 with ICU; its ICU headers clash with Foundation's own copy, and the
// reader needs none of ICU's types (only the encoding handler's struct, never used here, has them).
#undef LIBXML_ICU_ENABLED
#include <libxml/xmlreader.h>

// Frees what the reader returned to the caller (xmlFree is a variable of libxml2's).
static inline void ck_xml_free(void *pointer) { xmlFree(pointer); }
