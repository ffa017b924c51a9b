// pam_keychain: the PAM module that unlocks the user's login keychain at login (docs/login.md).
// Its entry points are PAM's (pam_sm_authenticate, pam_sm_setcred, pam_sm_open_session,
// pam_sm_close_session, pam_sm_chauthtok), declared by <security/pam_modules.h>; nothing else is
// exported.
#ifndef PAM_KEYCHAIN_H
#define PAM_KEYCHAIN_H
#endif
