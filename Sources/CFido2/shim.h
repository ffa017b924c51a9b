// libfido2 (Debian's libfido2-dev): FIDO2 security keys over CTAP2, used by UserPresence for the
// companion of `SecAccessControlCreateFlags.companion`. No CTAP message is built by this project.
#include <fido.h>
#include <fido/es256.h>
