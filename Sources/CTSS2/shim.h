// tpm2-tss (Debian's libtss2-dev): the Enhanced System API, the TCTI loader and the marshalling
// functions, used by KeychainTPM. No TPM command is marshalled by this project.
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>
