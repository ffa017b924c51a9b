// Security status codes and their messages.
//
// The codes, identifiers and messages are those of Apple's public `base/SecBase.h`
// (Security-61901.0.87.0.1): every `errSec…` code and the SecureTransport `errSSL…` codes declared
// there. Apple builds `SecCopyErrorMessageString`'s tables from the one-line comment that follows
// each code in that header; `secBaseStatusTable` below holds those messages, and the name of each
// code that has no comment (as Apple's `OSX/lib/generateErrStrings.pl` does).

public import _SecurityFoundation
internal import Libc

// MARK: - Security framework result codes

/// No error.
public let errSecSuccess: OSStatus = 0

/// Function or operation not implemented.
public let errSecUnimplemented: OSStatus = -4

/// The disk is full.
public let errSecDiskFull: OSStatus = -34

/// The former name of ``errSecDiskFull``.
@available(*, deprecated, renamed: "errSecDiskFull")
public let errSecDskFull: OSStatus = -34

/// I/O error.
public let errSecIO: OSStatus = -36

/// File already open with write permission.
public let errSecOpWr: OSStatus = -49

/// One or more parameters passed to a function were not valid.
public let errSecParam: OSStatus = -50

/// Write permissions error.
public let errSecWrPerm: OSStatus = -61

/// Failed to allocate memory.
public let errSecAllocate: OSStatus = -108

/// User canceled the operation.
public let errSecUserCanceled: OSStatus = -128

/// Bad parameter or invalid state for operation.
public let errSecBadReq: OSStatus = -909

/// An internal component failed (no header message: the name is the message).
public let errSecInternalComponent: OSStatus = -2070

/// An unknown Core Foundation error occurred (no header message: the name is the message).
public let errSecCoreFoundationUnknown: OSStatus = -4960

/// A required entitlement isn't present.
public let errSecMissingEntitlement: OSStatus = -34018

/// Client is restricted and is not permitted to perform this operation.
public let errSecRestrictedAPI: OSStatus = -34020

/// No keychain is available. You may need to restart your computer.
public let errSecNotAvailable: OSStatus = -25291

/// This keychain cannot be modified.
public let errSecReadOnly: OSStatus = -25292

/// The user name or passphrase you entered is not correct.
public let errSecAuthFailed: OSStatus = -25293

/// The specified keychain could not be found.
public let errSecNoSuchKeychain: OSStatus = -25294

/// The specified keychain is not a valid keychain file.
public let errSecInvalidKeychain: OSStatus = -25295

/// A keychain with the same name already exists.
public let errSecDuplicateKeychain: OSStatus = -25296

/// The specified callback function is already installed.
public let errSecDuplicateCallback: OSStatus = -25297

/// The specified callback function is not valid.
public let errSecInvalidCallback: OSStatus = -25298

/// The specified item already exists in the keychain.
public let errSecDuplicateItem: OSStatus = -25299

/// The specified item could not be found in the keychain.
public let errSecItemNotFound: OSStatus = -25300

/// There is not enough memory available to use the specified item.
public let errSecBufferTooSmall: OSStatus = -25301

/// This item contains information which is too large or in a format that cannot be displayed.
public let errSecDataTooLarge: OSStatus = -25302

/// The specified attribute does not exist.
public let errSecNoSuchAttr: OSStatus = -25303

/// The specified item is no longer valid. It may have been deleted from the keychain.
public let errSecInvalidItemRef: OSStatus = -25304

/// Unable to search the current keychain.
public let errSecInvalidSearchRef: OSStatus = -25305

/// The specified item does not appear to be a valid keychain item.
public let errSecNoSuchClass: OSStatus = -25306

/// A default keychain could not be found.
public let errSecNoDefaultKeychain: OSStatus = -25307

/// User interaction is not allowed.
public let errSecInteractionNotAllowed: OSStatus = -25308

/// The specified attribute could not be modified.
public let errSecReadOnlyAttr: OSStatus = -25309

/// This keychain was created by a different version of the system software and cannot be opened.
public let errSecWrongSecVersion: OSStatus = -25310

/// This item specifies a key size which is too large or too small.
public let errSecKeySizeNotAllowed: OSStatus = -25311

/// A required component (data storage module) could not be loaded. You may need to restart your
/// computer.
public let errSecNoStorageModule: OSStatus = -25312

/// A required component (certificate module) could not be loaded. You may need to restart your
/// computer.
public let errSecNoCertificateModule: OSStatus = -25313

/// A required component (policy module) could not be loaded. You may need to restart your computer.
public let errSecNoPolicyModule: OSStatus = -25314

/// User interaction is required, but is currently not allowed.
public let errSecInteractionRequired: OSStatus = -25315

/// The contents of this item cannot be retrieved.
public let errSecDataNotAvailable: OSStatus = -25316

/// The contents of this item cannot be modified.
public let errSecDataNotModifiable: OSStatus = -25317

/// One or more certificates required to validate this certificate cannot be found.
public let errSecCreateChainFailed: OSStatus = -25318

/// The specified preferences domain is not valid.
public let errSecInvalidPrefsDomain: OSStatus = -25319

/// In dark wake, no UI possible.
public let errSecInDarkWake: OSStatus = -25320

/// The specified access control list is not in standard (simple) form.
public let errSecACLNotSimple: OSStatus = -25240

/// The specified policy cannot be found.
public let errSecPolicyNotFound: OSStatus = -25241

/// The specified trust setting is invalid.
public let errSecInvalidTrustSetting: OSStatus = -25242

/// The specified item has no access control.
public let errSecNoAccessForItem: OSStatus = -25243

/// Invalid attempt to change the owner of this item.
public let errSecInvalidOwnerEdit: OSStatus = -25244

/// No trust results are available.
public let errSecTrustNotAvailable: OSStatus = -25245

/// Import/Export format unsupported.
public let errSecUnsupportedFormat: OSStatus = -25256

/// Unknown format in import.
public let errSecUnknownFormat: OSStatus = -25257

/// Key material must be wrapped for export.
public let errSecKeyIsSensitive: OSStatus = -25258

/// An attempt was made to import multiple private keys.
public let errSecMultiplePrivKeys: OSStatus = -25259

/// Passphrase is required for import/export.
public let errSecPassphraseRequired: OSStatus = -25260

/// The password reference was invalid.
public let errSecInvalidPasswordRef: OSStatus = -25261

/// The Trust Settings Record was corrupted.
public let errSecInvalidTrustSettings: OSStatus = -25262

/// No Trust Settings were found.
public let errSecNoTrustSettings: OSStatus = -25263

/// MAC verification failed during PKCS12 import (wrong password?).
public let errSecPkcs12VerifyFailure: OSStatus = -25264

/// A certificate was not signed by its proposed parent.
public let errSecNotSigner: OSStatus = -26267

/// Unable to decode the provided data.
public let errSecDecode: OSStatus = -26275

/// The required service is not available.
public let errSecServiceNotAvailable: OSStatus = -67585

/// The client ID is not correct.
public let errSecInsufficientClientID: OSStatus = -67586

/// A device reset has occurred.
public let errSecDeviceReset: OSStatus = -67587

/// A device failure has occurred.
public let errSecDeviceFailed: OSStatus = -67588

/// Adding an application ACL subject failed.
public let errSecAppleAddAppACLSubject: OSStatus = -67589

/// The public key is incomplete.
public let errSecApplePublicKeyIncomplete: OSStatus = -67590

/// A signature mismatch has occurred.
public let errSecAppleSignatureMismatch: OSStatus = -67591

/// The specified key has an invalid start date.
public let errSecAppleInvalidKeyStartDate: OSStatus = -67592

/// The specified key has an invalid end date.
public let errSecAppleInvalidKeyEndDate: OSStatus = -67593

/// A conversion error has occurred.
public let errSecConversionError: OSStatus = -67594

/// A SSLv2 rollback error has occurred.
public let errSecAppleSSLv2Rollback: OSStatus = -67595

/// The quota was exceeded.
public let errSecQuotaExceeded: OSStatus = -67596

/// The file is too big.
public let errSecFileTooBig: OSStatus = -67597

/// The specified database has an invalid blob.
public let errSecInvalidDatabaseBlob: OSStatus = -67598

/// The specified database has an invalid key blob.
public let errSecInvalidKeyBlob: OSStatus = -67599

/// The specified database has an incompatible blob.
public let errSecIncompatibleDatabaseBlob: OSStatus = -67600

/// The specified database has an incompatible key blob.
public let errSecIncompatibleKeyBlob: OSStatus = -67601

/// A host name mismatch has occurred.
public let errSecHostNameMismatch: OSStatus = -67602

/// There is an unknown critical extension flag.
public let errSecUnknownCriticalExtensionFlag: OSStatus = -67603

/// No basic constraints were found.
public let errSecNoBasicConstraints: OSStatus = -67604

/// No basic CA constraints were found.
public let errSecNoBasicConstraintsCA: OSStatus = -67605

/// The authority key ID is not valid.
public let errSecInvalidAuthorityKeyID: OSStatus = -67606

/// The subject key ID is not valid.
public let errSecInvalidSubjectKeyID: OSStatus = -67607

/// The key usage is not valid for the specified policy.
public let errSecInvalidKeyUsageForPolicy: OSStatus = -67608

/// The extended key usage is not valid.
public let errSecInvalidExtendedKeyUsage: OSStatus = -67609

/// The ID linkage is not valid.
public let errSecInvalidIDLinkage: OSStatus = -67610

/// The path length constraint was exceeded.
public let errSecPathLengthConstraintExceeded: OSStatus = -67611

/// The root or anchor certificate is not valid.
public let errSecInvalidRoot: OSStatus = -67612

/// The CRL has expired.
public let errSecCRLExpired: OSStatus = -67613

/// The CRL is not yet valid.
public let errSecCRLNotValidYet: OSStatus = -67614

/// The CRL was not found.
public let errSecCRLNotFound: OSStatus = -67615

/// The CRL server is down.
public let errSecCRLServerDown: OSStatus = -67616

/// The CRL has a bad Uniform Resource Identifier.
public let errSecCRLBadURI: OSStatus = -67617

/// An unknown certificate extension was encountered.
public let errSecUnknownCertExtension: OSStatus = -67618

/// An unknown CRL extension was encountered.
public let errSecUnknownCRLExtension: OSStatus = -67619

/// The CRL is not trusted.
public let errSecCRLNotTrusted: OSStatus = -67620

/// The CRL policy failed.
public let errSecCRLPolicyFailed: OSStatus = -67621

/// The issuing distribution point was not valid.
public let errSecIDPFailure: OSStatus = -67622

/// An email address mismatch was encountered.
public let errSecSMIMEEmailAddressesNotFound: OSStatus = -67623

/// The appropriate extended key usage for SMIME was not found.
public let errSecSMIMEBadExtendedKeyUsage: OSStatus = -67624

/// The key usage is not compatible with SMIME.
public let errSecSMIMEBadKeyUsage: OSStatus = -67625

/// The key usage extension is not marked as critical.
public let errSecSMIMEKeyUsageNotCritical: OSStatus = -67626

/// No email address was found in the certificate.
public let errSecSMIMENoEmailAddress: OSStatus = -67627

/// The subject alternative name extension is not marked as critical.
public let errSecSMIMESubjAltNameNotCritical: OSStatus = -67628

/// The appropriate extended key usage for SSL was not found.
public let errSecSSLBadExtendedKeyUsage: OSStatus = -67629

/// The OCSP response was incorrect or could not be parsed.
public let errSecOCSPBadResponse: OSStatus = -67630

/// The OCSP request was incorrect or could not be parsed.
public let errSecOCSPBadRequest: OSStatus = -67631

/// OCSP service is unavailable.
public let errSecOCSPUnavailable: OSStatus = -67632

/// The OCSP server did not recognize this certificate.
public let errSecOCSPStatusUnrecognized: OSStatus = -67633

/// An end-of-data was detected.
public let errSecEndOfData: OSStatus = -67634

/// An incomplete certificate revocation check occurred.
public let errSecIncompleteCertRevocationCheck: OSStatus = -67635

/// A network failure occurred.
public let errSecNetworkFailure: OSStatus = -67636

/// The OCSP response was not trusted to a root or anchor certificate.
public let errSecOCSPNotTrustedToAnchor: OSStatus = -67637

/// The record was modified.
public let errSecRecordModified: OSStatus = -67638

/// The OCSP response had an invalid signature.
public let errSecOCSPSignatureError: OSStatus = -67639

/// The OCSP response had no signer.
public let errSecOCSPNoSigner: OSStatus = -67640

/// The OCSP responder was given a malformed request.
public let errSecOCSPResponderMalformedReq: OSStatus = -67641

/// The OCSP responder encountered an internal error.
public let errSecOCSPResponderInternalError: OSStatus = -67642

/// The OCSP responder is busy, try again later.
public let errSecOCSPResponderTryLater: OSStatus = -67643

/// The OCSP responder requires a signature.
public let errSecOCSPResponderSignatureRequired: OSStatus = -67644

/// The OCSP responder rejected this request as unauthorized.
public let errSecOCSPResponderUnauthorized: OSStatus = -67645

/// The OCSP response nonce did not match the request.
public let errSecOCSPResponseNonceMismatch: OSStatus = -67646

/// Code signing encountered an incorrect certificate chain length.
public let errSecCodeSigningBadCertChainLength: OSStatus = -67647

/// Code signing found no basic constraints.
public let errSecCodeSigningNoBasicConstraints: OSStatus = -67648

/// Code signing encountered an incorrect path length constraint.
public let errSecCodeSigningBadPathLengthConstraint: OSStatus = -67649

/// Code signing found no extended key usage.
public let errSecCodeSigningNoExtendedKeyUsage: OSStatus = -67650

/// Code signing indicated use of a development-only certificate.
public let errSecCodeSigningDevelopment: OSStatus = -67651

/// Resource signing has encountered an incorrect certificate chain length.
public let errSecResourceSignBadCertChainLength: OSStatus = -67652

/// Resource signing has encountered an error in the extended key usage.
public let errSecResourceSignBadExtKeyUsage: OSStatus = -67653

/// The trust setting for this policy was set to Deny.
public let errSecTrustSettingDeny: OSStatus = -67654

/// An invalid certificate subject name was encountered.
public let errSecInvalidSubjectName: OSStatus = -67655

/// An unknown qualified certificate statement was encountered.
public let errSecUnknownQualifiedCertStatement: OSStatus = -67656

/// A MobileMe request was queued (no header message).
public let errSecMobileMeRequestQueued: OSStatus = -67657

/// A MobileMe request was redirected (no header message).
public let errSecMobileMeRequestRedirected: OSStatus = -67658

/// A MobileMe server error occurred (no header message).
public let errSecMobileMeServerError: OSStatus = -67659

/// The MobileMe server is not available (no header message).
public let errSecMobileMeServerNotAvailable: OSStatus = -67660

/// The MobileMe server already exists (no header message).
public let errSecMobileMeServerAlreadyExists: OSStatus = -67661

/// The MobileMe server reported a service error (no header message).
public let errSecMobileMeServerServiceErr: OSStatus = -67662

/// A MobileMe request is already pending (no header message).
public let errSecMobileMeRequestAlreadyPending: OSStatus = -67663

/// No MobileMe request is pending (no header message).
public let errSecMobileMeNoRequestPending: OSStatus = -67664

/// A MobileMe certificate signing request failed verification (no header message).
public let errSecMobileMeCSRVerifyFailure: OSStatus = -67665

/// A MobileMe consistency check failed (no header message).
public let errSecMobileMeFailedConsistencyCheck: OSStatus = -67666

/// A function was called without initializing CSSM.
public let errSecNotInitialized: OSStatus = -67667

/// The CSSM handle does not match with the service type.
public let errSecInvalidHandleUsage: OSStatus = -67668

/// A reference to the calling module was not found in the list of authorized callers.
public let errSecPVCReferentNotFound: OSStatus = -67669

/// A function address was not within the verified module.
public let errSecFunctionIntegrityFail: OSStatus = -67670

/// An internal error has occurred.
public let errSecInternalError: OSStatus = -67671

/// A memory error has occurred.
public let errSecMemoryError: OSStatus = -67672

/// Invalid data was encountered.
public let errSecInvalidData: OSStatus = -67673

/// A Module Directory Service error has occurred.
public let errSecMDSError: OSStatus = -67674

/// An invalid pointer was encountered.
public let errSecInvalidPointer: OSStatus = -67675

/// Self-check has failed.
public let errSecSelfCheckFailed: OSStatus = -67676

/// A function has failed.
public let errSecFunctionFailed: OSStatus = -67677

/// A module manifest verification failure has occurred.
public let errSecModuleManifestVerifyFailed: OSStatus = -67678

/// An invalid GUID was encountered.
public let errSecInvalidGUID: OSStatus = -67679

/// An invalid handle was encountered.
public let errSecInvalidHandle: OSStatus = -67680

/// An invalid DB list was encountered.
public let errSecInvalidDBList: OSStatus = -67681

/// An invalid passthrough ID was encountered.
public let errSecInvalidPassthroughID: OSStatus = -67682

/// An invalid network address was encountered.
public let errSecInvalidNetworkAddress: OSStatus = -67683

/// The certificate revocation list is already signed.
public let errSecCRLAlreadySigned: OSStatus = -67684

/// An invalid number of fields were encountered.
public let errSecInvalidNumberOfFields: OSStatus = -67685

/// A verification failure occurred.
public let errSecVerificationFailure: OSStatus = -67686

/// An unknown tag was encountered.
public let errSecUnknownTag: OSStatus = -67687

/// An invalid signature was encountered.
public let errSecInvalidSignature: OSStatus = -67688

/// An invalid name was encountered.
public let errSecInvalidName: OSStatus = -67689

/// An invalid certificate reference was encountered.
public let errSecInvalidCertificateRef: OSStatus = -67690

/// An invalid certificate group was encountered.
public let errSecInvalidCertificateGroup: OSStatus = -67691

/// The specified tag was not found.
public let errSecTagNotFound: OSStatus = -67692

/// The specified query was not valid.
public let errSecInvalidQuery: OSStatus = -67693

/// An invalid value was detected.
public let errSecInvalidValue: OSStatus = -67694

/// A callback has failed.
public let errSecCallbackFailed: OSStatus = -67695

/// An ACL delete operation has failed.
public let errSecACLDeleteFailed: OSStatus = -67696

/// An ACL replace operation has failed.
public let errSecACLReplaceFailed: OSStatus = -67697

/// An ACL add operation has failed.
public let errSecACLAddFailed: OSStatus = -67698

/// An ACL change operation has failed.
public let errSecACLChangeFailed: OSStatus = -67699

/// Invalid access credentials were encountered.
public let errSecInvalidAccessCredentials: OSStatus = -67700

/// An invalid record was encountered.
public let errSecInvalidRecord: OSStatus = -67701

/// An invalid ACL was encountered.
public let errSecInvalidACL: OSStatus = -67702

/// An invalid sample value was encountered.
public let errSecInvalidSampleValue: OSStatus = -67703

/// An incompatible version was encountered.
public let errSecIncompatibleVersion: OSStatus = -67704

/// The privilege was not granted.
public let errSecPrivilegeNotGranted: OSStatus = -67705

/// An invalid scope was encountered.
public let errSecInvalidScope: OSStatus = -67706

/// The PVC is already configured.
public let errSecPVCAlreadyConfigured: OSStatus = -67707

/// An invalid PVC was encountered.
public let errSecInvalidPVC: OSStatus = -67708

/// The EMM load has failed.
public let errSecEMMLoadFailed: OSStatus = -67709

/// The EMM unload has failed.
public let errSecEMMUnloadFailed: OSStatus = -67710

/// The add-in load operation has failed.
public let errSecAddinLoadFailed: OSStatus = -67711

/// An invalid key was encountered.
public let errSecInvalidKeyRef: OSStatus = -67712

/// An invalid key hierarchy was encountered.
public let errSecInvalidKeyHierarchy: OSStatus = -67713

/// The add-in unload operation has failed.
public let errSecAddinUnloadFailed: OSStatus = -67714

/// A library reference was not found.
public let errSecLibraryReferenceNotFound: OSStatus = -67715

/// An invalid add-in function table was encountered.
public let errSecInvalidAddinFunctionTable: OSStatus = -67716

/// An invalid service mask was encountered.
public let errSecInvalidServiceMask: OSStatus = -67717

/// A module was not loaded.
public let errSecModuleNotLoaded: OSStatus = -67718

/// An invalid subservice ID was encountered.
public let errSecInvalidSubServiceID: OSStatus = -67719

/// An attribute was not in the context.
public let errSecAttributeNotInContext: OSStatus = -67720

/// A module failed to initialize.
public let errSecModuleManagerInitializeFailed: OSStatus = -67721

/// A module was not found.
public let errSecModuleManagerNotFound: OSStatus = -67722

/// An event notification callback was not found.
public let errSecEventNotificationCallbackNotFound: OSStatus = -67723

/// An input length error was encountered.
public let errSecInputLengthError: OSStatus = -67724

/// An output length error was encountered.
public let errSecOutputLengthError: OSStatus = -67725

/// The privilege is not supported.
public let errSecPrivilegeNotSupported: OSStatus = -67726

/// A device error was encountered.
public let errSecDeviceError: OSStatus = -67727

/// The CSP handle was busy.
public let errSecAttachHandleBusy: OSStatus = -67728

/// You are not logged in.
public let errSecNotLoggedIn: OSStatus = -67729

/// An algorithm mismatch was encountered.
public let errSecAlgorithmMismatch: OSStatus = -67730

/// The key usage is incorrect.
public let errSecKeyUsageIncorrect: OSStatus = -67731

/// The key blob type is incorrect.
public let errSecKeyBlobTypeIncorrect: OSStatus = -67732

/// The key header is inconsistent.
public let errSecKeyHeaderInconsistent: OSStatus = -67733

/// The key header format is not supported.
public let errSecUnsupportedKeyFormat: OSStatus = -67734

/// The key size is not supported.
public let errSecUnsupportedKeySize: OSStatus = -67735

/// The key usage mask is not valid.
public let errSecInvalidKeyUsageMask: OSStatus = -67736

/// The key usage mask is not supported.
public let errSecUnsupportedKeyUsageMask: OSStatus = -67737

/// The key attribute mask is not valid.
public let errSecInvalidKeyAttributeMask: OSStatus = -67738

/// The key attribute mask is not supported.
public let errSecUnsupportedKeyAttributeMask: OSStatus = -67739

/// The key label is not valid.
public let errSecInvalidKeyLabel: OSStatus = -67740

/// The key label is not supported.
public let errSecUnsupportedKeyLabel: OSStatus = -67741

/// The key format is not valid.
public let errSecInvalidKeyFormat: OSStatus = -67742

/// The vector of buffers is not supported.
public let errSecUnsupportedVectorOfBuffers: OSStatus = -67743

/// The input vector is not valid.
public let errSecInvalidInputVector: OSStatus = -67744

/// The output vector is not valid.
public let errSecInvalidOutputVector: OSStatus = -67745

/// An invalid context was encountered.
public let errSecInvalidContext: OSStatus = -67746

/// An invalid algorithm was encountered.
public let errSecInvalidAlgorithm: OSStatus = -67747

/// A key attribute was not valid.
public let errSecInvalidAttributeKey: OSStatus = -67748

/// A key attribute was missing.
public let errSecMissingAttributeKey: OSStatus = -67749

/// An init vector attribute was not valid.
public let errSecInvalidAttributeInitVector: OSStatus = -67750

/// An init vector attribute was missing.
public let errSecMissingAttributeInitVector: OSStatus = -67751

/// A salt attribute was not valid.
public let errSecInvalidAttributeSalt: OSStatus = -67752

/// A salt attribute was missing.
public let errSecMissingAttributeSalt: OSStatus = -67753

/// A padding attribute was not valid.
public let errSecInvalidAttributePadding: OSStatus = -67754

/// A padding attribute was missing.
public let errSecMissingAttributePadding: OSStatus = -67755

/// A random number attribute was not valid.
public let errSecInvalidAttributeRandom: OSStatus = -67756

/// A random number attribute was missing.
public let errSecMissingAttributeRandom: OSStatus = -67757

/// A seed attribute was not valid.
public let errSecInvalidAttributeSeed: OSStatus = -67758

/// A seed attribute was missing.
public let errSecMissingAttributeSeed: OSStatus = -67759

/// A passphrase attribute was not valid.
public let errSecInvalidAttributePassphrase: OSStatus = -67760

/// A passphrase attribute was missing.
public let errSecMissingAttributePassphrase: OSStatus = -67761

/// A key length attribute was not valid.
public let errSecInvalidAttributeKeyLength: OSStatus = -67762

/// A key length attribute was missing.
public let errSecMissingAttributeKeyLength: OSStatus = -67763

/// A block size attribute was not valid.
public let errSecInvalidAttributeBlockSize: OSStatus = -67764

/// A block size attribute was missing.
public let errSecMissingAttributeBlockSize: OSStatus = -67765

/// An output size attribute was not valid.
public let errSecInvalidAttributeOutputSize: OSStatus = -67766

/// An output size attribute was missing.
public let errSecMissingAttributeOutputSize: OSStatus = -67767

/// The number of rounds attribute was not valid.
public let errSecInvalidAttributeRounds: OSStatus = -67768

/// The number of rounds attribute was missing.
public let errSecMissingAttributeRounds: OSStatus = -67769

/// An algorithm parameters attribute was not valid.
public let errSecInvalidAlgorithmParms: OSStatus = -67770

/// An algorithm parameters attribute was missing.
public let errSecMissingAlgorithmParms: OSStatus = -67771

/// A label attribute was not valid.
public let errSecInvalidAttributeLabel: OSStatus = -67772

/// A label attribute was missing.
public let errSecMissingAttributeLabel: OSStatus = -67773

/// A key type attribute was not valid.
public let errSecInvalidAttributeKeyType: OSStatus = -67774

/// A key type attribute was missing.
public let errSecMissingAttributeKeyType: OSStatus = -67775

/// A mode attribute was not valid.
public let errSecInvalidAttributeMode: OSStatus = -67776

/// A mode attribute was missing.
public let errSecMissingAttributeMode: OSStatus = -67777

/// An effective bits attribute was not valid.
public let errSecInvalidAttributeEffectiveBits: OSStatus = -67778

/// An effective bits attribute was missing.
public let errSecMissingAttributeEffectiveBits: OSStatus = -67779

/// A start date attribute was not valid.
public let errSecInvalidAttributeStartDate: OSStatus = -67780

/// A start date attribute was missing.
public let errSecMissingAttributeStartDate: OSStatus = -67781

/// An end date attribute was not valid.
public let errSecInvalidAttributeEndDate: OSStatus = -67782

/// An end date attribute was missing.
public let errSecMissingAttributeEndDate: OSStatus = -67783

/// A version attribute was not valid.
public let errSecInvalidAttributeVersion: OSStatus = -67784

/// A version attribute was missing.
public let errSecMissingAttributeVersion: OSStatus = -67785

/// A prime attribute was not valid.
public let errSecInvalidAttributePrime: OSStatus = -67786

/// A prime attribute was missing.
public let errSecMissingAttributePrime: OSStatus = -67787

/// A base attribute was not valid.
public let errSecInvalidAttributeBase: OSStatus = -67788

/// A base attribute was missing.
public let errSecMissingAttributeBase: OSStatus = -67789

/// A subprime attribute was not valid.
public let errSecInvalidAttributeSubprime: OSStatus = -67790

/// A subprime attribute was missing.
public let errSecMissingAttributeSubprime: OSStatus = -67791

/// An iteration count attribute was not valid.
public let errSecInvalidAttributeIterationCount: OSStatus = -67792

/// An iteration count attribute was missing.
public let errSecMissingAttributeIterationCount: OSStatus = -67793

/// A database handle attribute was not valid.
public let errSecInvalidAttributeDLDBHandle: OSStatus = -67794

/// A database handle attribute was missing.
public let errSecMissingAttributeDLDBHandle: OSStatus = -67795

/// An access credentials attribute was not valid.
public let errSecInvalidAttributeAccessCredentials: OSStatus = -67796

/// An access credentials attribute was missing.
public let errSecMissingAttributeAccessCredentials: OSStatus = -67797

/// A public key format attribute was not valid.
public let errSecInvalidAttributePublicKeyFormat: OSStatus = -67798

/// A public key format attribute was missing.
public let errSecMissingAttributePublicKeyFormat: OSStatus = -67799

/// A private key format attribute was not valid.
public let errSecInvalidAttributePrivateKeyFormat: OSStatus = -67800

/// A private key format attribute was missing.
public let errSecMissingAttributePrivateKeyFormat: OSStatus = -67801

/// A symmetric key format attribute was not valid.
public let errSecInvalidAttributeSymmetricKeyFormat: OSStatus = -67802

/// A symmetric key format attribute was missing.
public let errSecMissingAttributeSymmetricKeyFormat: OSStatus = -67803

/// A wrapped key format attribute was not valid.
public let errSecInvalidAttributeWrappedKeyFormat: OSStatus = -67804

/// A wrapped key format attribute was missing.
public let errSecMissingAttributeWrappedKeyFormat: OSStatus = -67805

/// A staged operation is in progress.
public let errSecStagedOperationInProgress: OSStatus = -67806

/// A staged operation was not started.
public let errSecStagedOperationNotStarted: OSStatus = -67807

/// A cryptographic verification failure has occurred.
public let errSecVerifyFailed: OSStatus = -67808

/// The query size is unknown.
public let errSecQuerySizeUnknown: OSStatus = -67809

/// A block size mismatch occurred.
public let errSecBlockSizeMismatch: OSStatus = -67810

/// The public key was inconsistent.
public let errSecPublicKeyInconsistent: OSStatus = -67811

/// A device verification failure has occurred.
public let errSecDeviceVerifyFailed: OSStatus = -67812

/// An invalid login name was detected.
public let errSecInvalidLoginName: OSStatus = -67813

/// The user is already logged in.
public let errSecAlreadyLoggedIn: OSStatus = -67814

/// An invalid digest algorithm was detected.
public let errSecInvalidDigestAlgorithm: OSStatus = -67815

/// An invalid CRL group was detected.
public let errSecInvalidCRLGroup: OSStatus = -67816

/// The certificate cannot operate.
public let errSecCertificateCannotOperate: OSStatus = -67817

/// An expired certificate was detected.
public let errSecCertificateExpired: OSStatus = -67818

/// The certificate is not yet valid.
public let errSecCertificateNotValidYet: OSStatus = -67819

/// The certificate was revoked.
public let errSecCertificateRevoked: OSStatus = -67820

/// The certificate was suspended.
public let errSecCertificateSuspended: OSStatus = -67821

/// Insufficient credentials were detected.
public let errSecInsufficientCredentials: OSStatus = -67822

/// The action was not valid.
public let errSecInvalidAction: OSStatus = -67823

/// The authority was not valid.
public let errSecInvalidAuthority: OSStatus = -67824

/// A verify action has failed.
public let errSecVerifyActionFailed: OSStatus = -67825

/// The certificate authority was not valid.
public let errSecInvalidCertAuthority: OSStatus = -67826

/// The CRL authority was not valid.
public let errSecInvalidCRLAuthority: OSStatus = -67827

/// A misspelled former name of ``errSecInvalidCRLAuthority``.
@available(*, deprecated, renamed: "errSecInvalidCRLAuthority")
public let errSecInvaldCRLAuthority: OSStatus = -67827

/// The CRL encoding was not valid.
public let errSecInvalidCRLEncoding: OSStatus = -67828

/// The CRL type was not valid.
public let errSecInvalidCRLType: OSStatus = -67829

/// The CRL was not valid.
public let errSecInvalidCRL: OSStatus = -67830

/// The form type was not valid.
public let errSecInvalidFormType: OSStatus = -67831

/// The ID was not valid.
public let errSecInvalidID: OSStatus = -67832

/// The identifier was not valid.
public let errSecInvalidIdentifier: OSStatus = -67833

/// The index was not valid.
public let errSecInvalidIndex: OSStatus = -67834

/// The policy identifiers are not valid.
public let errSecInvalidPolicyIdentifiers: OSStatus = -67835

/// The time specified was not valid.
public let errSecInvalidTimeString: OSStatus = -67836

/// The trust policy reason was not valid.
public let errSecInvalidReason: OSStatus = -67837

/// The request inputs are not valid.
public let errSecInvalidRequestInputs: OSStatus = -67838

/// The response vector was not valid.
public let errSecInvalidResponseVector: OSStatus = -67839

/// The stop-on policy was not valid.
public let errSecInvalidStopOnPolicy: OSStatus = -67840

/// The tuple was not valid.
public let errSecInvalidTuple: OSStatus = -67841

/// Multiple values are not supported.
public let errSecMultipleValuesUnsupported: OSStatus = -67842

/// The certificate was not trusted.
public let errSecNotTrusted: OSStatus = -67843

/// No default authority was detected.
public let errSecNoDefaultAuthority: OSStatus = -67844

/// The trust policy had a rejected form.
public let errSecRejectedForm: OSStatus = -67845

/// The request was lost.
public let errSecRequestLost: OSStatus = -67846

/// The request was rejected.
public let errSecRequestRejected: OSStatus = -67847

/// The address type is not supported.
public let errSecUnsupportedAddressType: OSStatus = -67848

/// The service is not supported.
public let errSecUnsupportedService: OSStatus = -67849

/// The tuple group was not valid.
public let errSecInvalidTupleGroup: OSStatus = -67850

/// The base ACLs are not valid.
public let errSecInvalidBaseACLs: OSStatus = -67851

/// The tuple credentials are not valid.
public let errSecInvalidTupleCredentials: OSStatus = -67852

/// A misspelled former name of ``errSecInvalidTupleCredentials``.
@available(*, deprecated, renamed: "errSecInvalidTupleCredentials")
public let errSecInvalidTupleCredendtials: OSStatus = -67852

/// The encoding was not valid.
public let errSecInvalidEncoding: OSStatus = -67853

/// The validity period was not valid.
public let errSecInvalidValidityPeriod: OSStatus = -67854

/// The requestor was not valid.
public let errSecInvalidRequestor: OSStatus = -67855

/// The request descriptor was not valid.
public let errSecRequestDescriptor: OSStatus = -67856

/// The bundle information was not valid.
public let errSecInvalidBundleInfo: OSStatus = -67857

/// The CRL index was not valid.
public let errSecInvalidCRLIndex: OSStatus = -67858

/// No field values were detected.
public let errSecNoFieldValues: OSStatus = -67859

/// The field format is not supported.
public let errSecUnsupportedFieldFormat: OSStatus = -67860

/// The index information is not supported.
public let errSecUnsupportedIndexInfo: OSStatus = -67861

/// The locality is not supported.
public let errSecUnsupportedLocality: OSStatus = -67862

/// The number of attributes is not supported.
public let errSecUnsupportedNumAttributes: OSStatus = -67863

/// The number of indexes is not supported.
public let errSecUnsupportedNumIndexes: OSStatus = -67864

/// The number of record types is not supported.
public let errSecUnsupportedNumRecordTypes: OSStatus = -67865

/// Too many fields were specified.
public let errSecFieldSpecifiedMultiple: OSStatus = -67866

/// The field format was incompatible.
public let errSecIncompatibleFieldFormat: OSStatus = -67867

/// The parsing module was not valid.
public let errSecInvalidParsingModule: OSStatus = -67868

/// The database is locked.
public let errSecDatabaseLocked: OSStatus = -67869

/// The data store is open.
public let errSecDatastoreIsOpen: OSStatus = -67870

/// A missing value was detected.
public let errSecMissingValue: OSStatus = -67871

/// The query limits are not supported.
public let errSecUnsupportedQueryLimits: OSStatus = -67872

/// The number of selection predicates is not supported.
public let errSecUnsupportedNumSelectionPreds: OSStatus = -67873

/// The operator is not supported.
public let errSecUnsupportedOperator: OSStatus = -67874

/// The database location is not valid.
public let errSecInvalidDBLocation: OSStatus = -67875

/// The access request is not valid.
public let errSecInvalidAccessRequest: OSStatus = -67876

/// The index information is not valid.
public let errSecInvalidIndexInfo: OSStatus = -67877

/// The new owner is not valid.
public let errSecInvalidNewOwner: OSStatus = -67878

/// The modify mode is not valid.
public let errSecInvalidModifyMode: OSStatus = -67879

/// A required certificate extension is missing.
public let errSecMissingRequiredExtension: OSStatus = -67880

/// The extended key usage extension was not marked critical.
public let errSecExtendedKeyUsageNotCritical: OSStatus = -67881

/// A timestamp was expected but was not found.
public let errSecTimestampMissing: OSStatus = -67882

/// The timestamp was not valid.
public let errSecTimestampInvalid: OSStatus = -67883

/// The timestamp was not trusted.
public let errSecTimestampNotTrusted: OSStatus = -67884

/// The timestamp service is not available.
public let errSecTimestampServiceNotAvailable: OSStatus = -67885

/// An unrecognized or unsupported Algorithm Identifier in timestamp.
public let errSecTimestampBadAlg: OSStatus = -67886

/// The timestamp transaction is not permitted or supported.
public let errSecTimestampBadRequest: OSStatus = -67887

/// The timestamp data submitted has the wrong format.
public let errSecTimestampBadDataFormat: OSStatus = -67888

/// The time source for the Timestamp Authority is not available.
public let errSecTimestampTimeNotAvailable: OSStatus = -67889

/// The requested policy is not supported by the Timestamp Authority.
public let errSecTimestampUnacceptedPolicy: OSStatus = -67890

/// The requested extension is not supported by the Timestamp Authority.
public let errSecTimestampUnacceptedExtension: OSStatus = -67891

/// The additional information requested is not available.
public let errSecTimestampAddInfoNotAvailable: OSStatus = -67892

/// The timestamp request cannot be handled due to system failure.
public let errSecTimestampSystemFailure: OSStatus = -67893

/// A signing time was expected but was not found.
public let errSecSigningTimeMissing: OSStatus = -67894

/// A timestamp transaction was rejected.
public let errSecTimestampRejection: OSStatus = -67895

/// A timestamp transaction is waiting.
public let errSecTimestampWaiting: OSStatus = -67896

/// A timestamp authority revocation warning was issued.
public let errSecTimestampRevocationWarning: OSStatus = -67897

/// A timestamp authority revocation notification was issued.
public let errSecTimestampRevocationNotification: OSStatus = -67898

/// The requested policy is not allowed for this certificate.
public let errSecCertificatePolicyNotAllowed: OSStatus = -67899

/// The requested name is not allowed for this certificate.
public let errSecCertificateNameNotAllowed: OSStatus = -67900

/// The validity period in the certificate exceeds the maximum allowed.
public let errSecCertificateValidityPeriodTooLong: OSStatus = -67901

/// The verified certificate is a CA rather than an end-entity.
public let errSecCertificateIsCA: OSStatus = -67902

/// The certificate contains multiple extensions with the same extension ID.
public let errSecCertificateDuplicateExtension: OSStatus = -67903

/// A qualified certificate statement was expected but missing.
public let errSecMissingQualifiedCertStatement: OSStatus = -67904

// MARK: - SecureTransport result codes

/// SSL protocol error.
public let errSSLProtocol: OSStatus = -9800

/// Cipher Suite negotiation failure.
public let errSSLNegotiation: OSStatus = -9801

/// Fatal alert.
public let errSSLFatalAlert: OSStatus = -9802

/// I/O would block (not fatal).
public let errSSLWouldBlock: OSStatus = -9803

/// Attempt to restore an unknown session.
public let errSSLSessionNotFound: OSStatus = -9804

/// Connection closed gracefully.
public let errSSLClosedGraceful: OSStatus = -9805

/// Connection closed via error.
public let errSSLClosedAbort: OSStatus = -9806

/// Invalid certificate chain.
public let errSSLXCertChainInvalid: OSStatus = -9807

/// Bad certificate format.
public let errSSLBadCert: OSStatus = -9808

/// Underlying cryptographic error.
public let errSSLCrypto: OSStatus = -9809

/// Internal error.
public let errSSLInternal: OSStatus = -9810

/// Module attach failure.
public let errSSLModuleAttach: OSStatus = -9811

/// Valid cert chain, untrusted root.
public let errSSLUnknownRootCert: OSStatus = -9812

/// Cert chain not verified by root.
public let errSSLNoRootCert: OSStatus = -9813

/// Chain had an expired cert.
public let errSSLCertExpired: OSStatus = -9814

/// Chain had a cert not yet valid.
public let errSSLCertNotYetValid: OSStatus = -9815

/// Server closed session with no notification.
public let errSSLClosedNoNotify: OSStatus = -9816

/// Insufficient buffer provided.
public let errSSLBufferOverflow: OSStatus = -9817

/// Bad SSLCipherSuite.
public let errSSLBadCipherSuite: OSStatus = -9818

/// Unexpected message received.
public let errSSLPeerUnexpectedMsg: OSStatus = -9819

/// Bad MAC.
public let errSSLPeerBadRecordMac: OSStatus = -9820

/// Decryption failed.
public let errSSLPeerDecryptionFail: OSStatus = -9821

/// Record overflow.
public let errSSLPeerRecordOverflow: OSStatus = -9822

/// Decompression failure.
public let errSSLPeerDecompressFail: OSStatus = -9823

/// Handshake failure.
public let errSSLPeerHandshakeFail: OSStatus = -9824

/// Misc. bad certificate.
public let errSSLPeerBadCert: OSStatus = -9825

/// Bad unsupported cert format.
public let errSSLPeerUnsupportedCert: OSStatus = -9826

/// Certificate revoked.
public let errSSLPeerCertRevoked: OSStatus = -9827

/// Certificate expired.
public let errSSLPeerCertExpired: OSStatus = -9828

/// Unknown certificate.
public let errSSLPeerCertUnknown: OSStatus = -9829

/// Illegal parameter.
public let errSSLIllegalParam: OSStatus = -9830

/// Unknown Cert Authority.
public let errSSLPeerUnknownCA: OSStatus = -9831

/// Access denied.
public let errSSLPeerAccessDenied: OSStatus = -9832

/// Decoding error.
public let errSSLPeerDecodeError: OSStatus = -9833

/// Decryption error.
public let errSSLPeerDecryptError: OSStatus = -9834

/// Export restriction.
public let errSSLPeerExportRestriction: OSStatus = -9835

/// Bad protocol version.
public let errSSLPeerProtocolVersion: OSStatus = -9836

/// Insufficient security.
public let errSSLPeerInsufficientSecurity: OSStatus = -9837

/// Internal error.
public let errSSLPeerInternalError: OSStatus = -9838

/// User canceled.
public let errSSLPeerUserCancelled: OSStatus = -9839

/// No renegotiation allowed.
public let errSSLPeerNoRenegotiation: OSStatus = -9840

/// Peer cert is valid, or was ignored if verification disabled.
public let errSSLPeerAuthCompleted: OSStatus = -9841

/// Server has requested a client cert.
public let errSSLClientCertRequested: OSStatus = -9842

/// Peer host name mismatch.
public let errSSLHostNameMismatch: OSStatus = -9843

/// Peer dropped connection before responding.
public let errSSLConnectionRefused: OSStatus = -9844

/// Decryption failure.
public let errSSLDecryptionFail: OSStatus = -9845

/// Bad MAC.
public let errSSLBadRecordMac: OSStatus = -9846

/// Record overflow.
public let errSSLRecordOverflow: OSStatus = -9847

/// Configuration error.
public let errSSLBadConfiguration: OSStatus = -9848

/// Unexpected (skipped) record in DTLS.
public let errSSLUnexpectedRecord: OSStatus = -9849

/// Weak ephemeral dh key.
public let errSSLWeakPeerEphemeralDHKey: OSStatus = -9850

/// SNI.
public let errSSLClientHelloReceived: OSStatus = -9851

/// Transport (socket) shutdown, e.g., TCP RST or FIN.
public let errSSLTransportReset: OSStatus = -9852

/// Network timeout triggered.
public let errSSLNetworkTimeout: OSStatus = -9853

/// TLS configuration failed.
public let errSSLConfigurationFailed: OSStatus = -9854

/// Unsupported TLS extension.
public let errSSLUnsupportedExtension: OSStatus = -9855

/// Peer rejected unexpected message.
public let errSSLUnexpectedMessage: OSStatus = -9856

/// Decompression failed.
public let errSSLDecompressFail: OSStatus = -9857

/// Handshake failed.
public let errSSLHandshakeFail: OSStatus = -9858

/// Decode failed.
public let errSSLDecodeError: OSStatus = -9859

/// Inappropriate fallback.
public let errSSLInappropriateFallback: OSStatus = -9860

/// Missing extension.
public let errSSLMissingExtension: OSStatus = -9861

/// Bad OCSP response.
public let errSSLBadCertificateStatusResponse: OSStatus = -9862

/// Certificate required.
public let errSSLCertificateRequired: OSStatus = -9863

/// Unknown PSK identity.
public let errSSLUnknownPSKIdentity: OSStatus = -9864

/// Unknown or unrecognized name.
public let errSSLUnrecognizedName: OSStatus = -9865

/// ATS violation.
public let errSSLATSViolation: OSStatus = -9880

/// ATS violation: minimum protocol version is not ATS compliant.
public let errSSLATSMinimumVersionViolation: OSStatus = -9881

/// ATS violation: selected ciphersuite is not ATS compliant.
public let errSSLATSCiphersuiteViolation: OSStatus = -9882

/// ATS violation: peer key size is not ATS compliant.
public let errSSLATSMinimumKeySizeViolation: OSStatus = -9883

/// ATS violation: peer leaf certificate hash algorithm is not ATS compliant.
public let errSSLATSLeafCertificateHashAlgorithmViolation: OSStatus = -9884

/// ATS violation: peer certificate hash algorithm is not ATS compliant.
public let errSSLATSCertificateHashAlgorithmViolation: OSStatus = -9885

/// ATS violation: peer certificate is not issued by trusted peer.
public let errSSLATSCertificateTrustViolation: OSStatus = -9886

/// Early application data rejected by peer.
public let errSSLEarlyDataRejected: OSStatus = -9890

// MARK: - Messages

/// A status code of `SecBase.h` with its identifier and the message of its header comment.
package struct SecStatusDescription: Sendable {
    /// The status code.
    package let status: OSStatus
    /// The code's identifier, such as `"errSecItemNotFound"`.
    package let name: String
    /// The comment that follows the code in `SecBase.h`, or `nil` if it has none.
    package let message: String?

    init(_ status: OSStatus, _ name: String, _ message: String?) {
        self.status = status
        self.name = name
        self.message = message
    }
}

/// Every status code of `SecBase.h` with its identifier and message, in the header's order.
package let secBaseStatusTable: [SecStatusDescription] = [
    .init(errSecSuccess, "errSecSuccess", "No error."),
    .init(
        errSecUnimplemented, "errSecUnimplemented", "Function or operation not implemented."),
    .init(errSecDiskFull, "errSecDiskFull", "The disk is full."),
    .init(errSecIO, "errSecIO", "I/O error."),
    .init(errSecOpWr, "errSecOpWr", "File already open with write permission."),
    .init(
        errSecParam, "errSecParam", "One or more parameters passed to a function were not valid."),
    .init(errSecWrPerm, "errSecWrPerm", "Write permissions error."),
    .init(errSecAllocate, "errSecAllocate", "Failed to allocate memory."),
    .init(errSecUserCanceled, "errSecUserCanceled", "User canceled the operation."),
    .init(
        errSecBadReq, "errSecBadReq", "Bad parameter or invalid state for operation."),
    .init(errSecInternalComponent, "errSecInternalComponent", nil),
    .init(errSecCoreFoundationUnknown, "errSecCoreFoundationUnknown", nil),
    .init(
        errSecMissingEntitlement, "errSecMissingEntitlement",
        "A required entitlement isn't present."),
    .init(
        errSecRestrictedAPI, "errSecRestrictedAPI",
        "Client is restricted and is not permitted to perform this operation."),
    .init(
        errSecNotAvailable, "errSecNotAvailable",
        "No keychain is available. You may need to restart your computer."),
    .init(errSecReadOnly, "errSecReadOnly", "This keychain cannot be modified."),
    .init(
        errSecAuthFailed, "errSecAuthFailed",
        "The user name or passphrase you entered is not correct."),
    .init(
        errSecNoSuchKeychain, "errSecNoSuchKeychain", "The specified keychain could not be found."),
    .init(
        errSecInvalidKeychain, "errSecInvalidKeychain",
        "The specified keychain is not a valid keychain file."),
    .init(
        errSecDuplicateKeychain, "errSecDuplicateKeychain",
        "A keychain with the same name already exists."),
    .init(
        errSecDuplicateCallback, "errSecDuplicateCallback",
        "The specified callback function is already installed."),
    .init(
        errSecInvalidCallback, "errSecInvalidCallback",
        "The specified callback function is not valid."),
    .init(
        errSecDuplicateItem, "errSecDuplicateItem",
        "The specified item already exists in the keychain."),
    .init(
        errSecItemNotFound, "errSecItemNotFound",
        "The specified item could not be found in the keychain."),
    .init(
        errSecBufferTooSmall, "errSecBufferTooSmall",
        "There is not enough memory available to use the specified item."),
    .init(
        errSecDataTooLarge, "errSecDataTooLarge",
        "This item contains information which is too large or in a format that cannot be displayed."
    ),
    .init(
        errSecNoSuchAttr, "errSecNoSuchAttr", "The specified attribute does not exist."),
    .init(
        errSecInvalidItemRef, "errSecInvalidItemRef",
        "The specified item is no longer valid. It may have been deleted from the keychain."),
    .init(
        errSecInvalidSearchRef, "errSecInvalidSearchRef", "Unable to search the current keychain."),
    .init(
        errSecNoSuchClass, "errSecNoSuchClass",
        "The specified item does not appear to be a valid keychain item."),
    .init(
        errSecNoDefaultKeychain, "errSecNoDefaultKeychain", "A default keychain could not be found."
    ),
    .init(
        errSecInteractionNotAllowed, "errSecInteractionNotAllowed",
        "User interaction is not allowed."),
    .init(
        errSecReadOnlyAttr, "errSecReadOnlyAttr", "The specified attribute could not be modified."),
    .init(
        errSecWrongSecVersion, "errSecWrongSecVersion",
        "This keychain was created by a different version of the system software and cannot be opened."
    ),
    .init(
        errSecKeySizeNotAllowed, "errSecKeySizeNotAllowed",
        "This item specifies a key size which is too large or too small."),
    .init(
        errSecNoStorageModule, "errSecNoStorageModule",
        "A required component (data storage module) could not be loaded. You may need to restart your computer."
    ),
    .init(
        errSecNoCertificateModule, "errSecNoCertificateModule",
        "A required component (certificate module) could not be loaded. You may need to restart your computer."
    ),
    .init(
        errSecNoPolicyModule, "errSecNoPolicyModule",
        "A required component (policy module) could not be loaded. You may need to restart your computer."
    ),
    .init(
        errSecInteractionRequired, "errSecInteractionRequired",
        "User interaction is required, but is currently not allowed."),
    .init(
        errSecDataNotAvailable, "errSecDataNotAvailable",
        "The contents of this item cannot be retrieved."),
    .init(
        errSecDataNotModifiable, "errSecDataNotModifiable",
        "The contents of this item cannot be modified."),
    .init(
        errSecCreateChainFailed, "errSecCreateChainFailed",
        "One or more certificates required to validate this certificate cannot be found."),
    .init(
        errSecInvalidPrefsDomain, "errSecInvalidPrefsDomain",
        "The specified preferences domain is not valid."),
    .init(errSecInDarkWake, "errSecInDarkWake", "In dark wake, no UI possible"),
    .init(
        errSecACLNotSimple, "errSecACLNotSimple",
        "The specified access control list is not in standard (simple) form."),
    .init(
        errSecPolicyNotFound, "errSecPolicyNotFound", "The specified policy cannot be found."),
    .init(
        errSecInvalidTrustSetting, "errSecInvalidTrustSetting",
        "The specified trust setting is invalid."),
    .init(
        errSecNoAccessForItem, "errSecNoAccessForItem", "The specified item has no access control."),
    .init(
        errSecInvalidOwnerEdit, "errSecInvalidOwnerEdit",
        "Invalid attempt to change the owner of this item."),
    .init(
        errSecTrustNotAvailable, "errSecTrustNotAvailable", "No trust results are available."),
    .init(
        errSecUnsupportedFormat, "errSecUnsupportedFormat", "Import/Export format unsupported."),
    .init(errSecUnknownFormat, "errSecUnknownFormat", "Unknown format in import."),
    .init(
        errSecKeyIsSensitive, "errSecKeyIsSensitive", "Key material must be wrapped for export."),
    .init(
        errSecMultiplePrivKeys, "errSecMultiplePrivKeys",
        "An attempt was made to import multiple private keys."),
    .init(
        errSecPassphraseRequired, "errSecPassphraseRequired",
        "Passphrase is required for import/export."),
    .init(
        errSecInvalidPasswordRef, "errSecInvalidPasswordRef", "The password reference was invalid."),
    .init(
        errSecInvalidTrustSettings, "errSecInvalidTrustSettings",
        "The Trust Settings Record was corrupted."),
    .init(
        errSecNoTrustSettings, "errSecNoTrustSettings", "No Trust Settings were found."),
    .init(
        errSecPkcs12VerifyFailure, "errSecPkcs12VerifyFailure",
        "MAC verification failed during PKCS12 import (wrong password?)"),
    .init(
        errSecNotSigner, "errSecNotSigner", "A certificate was not signed by its proposed parent."),
    .init(errSecDecode, "errSecDecode", "Unable to decode the provided data."),
    .init(
        errSecServiceNotAvailable, "errSecServiceNotAvailable",
        "The required service is not available."),
    .init(
        errSecInsufficientClientID, "errSecInsufficientClientID", "The client ID is not correct."),
    .init(errSecDeviceReset, "errSecDeviceReset", "A device reset has occurred."),
    .init(
        errSecDeviceFailed, "errSecDeviceFailed", "A device failure has occurred."),
    .init(
        errSecAppleAddAppACLSubject, "errSecAppleAddAppACLSubject",
        "Adding an application ACL subject failed."),
    .init(
        errSecApplePublicKeyIncomplete, "errSecApplePublicKeyIncomplete",
        "The public key is incomplete."),
    .init(
        errSecAppleSignatureMismatch, "errSecAppleSignatureMismatch",
        "A signature mismatch has occurred."),
    .init(
        errSecAppleInvalidKeyStartDate, "errSecAppleInvalidKeyStartDate",
        "The specified key has an invalid start date."),
    .init(
        errSecAppleInvalidKeyEndDate, "errSecAppleInvalidKeyEndDate",
        "The specified key has an invalid end date."),
    .init(
        errSecConversionError, "errSecConversionError", "A conversion error has occurred."),
    .init(
        errSecAppleSSLv2Rollback, "errSecAppleSSLv2Rollback", "A SSLv2 rollback error has occurred."
    ),
    .init(errSecQuotaExceeded, "errSecQuotaExceeded", "The quota was exceeded."),
    .init(errSecFileTooBig, "errSecFileTooBig", "The file is too big."),
    .init(
        errSecInvalidDatabaseBlob, "errSecInvalidDatabaseBlob",
        "The specified database has an invalid blob."),
    .init(
        errSecInvalidKeyBlob, "errSecInvalidKeyBlob",
        "The specified database has an invalid key blob."),
    .init(
        errSecIncompatibleDatabaseBlob, "errSecIncompatibleDatabaseBlob",
        "The specified database has an incompatible blob."),
    .init(
        errSecIncompatibleKeyBlob, "errSecIncompatibleKeyBlob",
        "The specified database has an incompatible key blob."),
    .init(
        errSecHostNameMismatch, "errSecHostNameMismatch", "A host name mismatch has occurred."),
    .init(
        errSecUnknownCriticalExtensionFlag, "errSecUnknownCriticalExtensionFlag",
        "There is an unknown critical extension flag."),
    .init(
        errSecNoBasicConstraints, "errSecNoBasicConstraints", "No basic constraints were found."),
    .init(
        errSecNoBasicConstraintsCA, "errSecNoBasicConstraintsCA",
        "No basic CA constraints were found."),
    .init(
        errSecInvalidAuthorityKeyID, "errSecInvalidAuthorityKeyID",
        "The authority key ID is not valid."),
    .init(
        errSecInvalidSubjectKeyID, "errSecInvalidSubjectKeyID", "The subject key ID is not valid."),
    .init(
        errSecInvalidKeyUsageForPolicy, "errSecInvalidKeyUsageForPolicy",
        "The key usage is not valid for the specified policy."),
    .init(
        errSecInvalidExtendedKeyUsage, "errSecInvalidExtendedKeyUsage",
        "The extended key usage is not valid."),
    .init(
        errSecInvalidIDLinkage, "errSecInvalidIDLinkage", "The ID linkage is not valid."),
    .init(
        errSecPathLengthConstraintExceeded, "errSecPathLengthConstraintExceeded",
        "The path length constraint was exceeded."),
    .init(
        errSecInvalidRoot, "errSecInvalidRoot", "The root or anchor certificate is not valid."),
    .init(errSecCRLExpired, "errSecCRLExpired", "The CRL has expired."),
    .init(errSecCRLNotValidYet, "errSecCRLNotValidYet", "The CRL is not yet valid."),
    .init(errSecCRLNotFound, "errSecCRLNotFound", "The CRL was not found."),
    .init(errSecCRLServerDown, "errSecCRLServerDown", "The CRL server is down."),
    .init(
        errSecCRLBadURI, "errSecCRLBadURI", "The CRL has a bad Uniform Resource Identifier."),
    .init(
        errSecUnknownCertExtension, "errSecUnknownCertExtension",
        "An unknown certificate extension was encountered."),
    .init(
        errSecUnknownCRLExtension, "errSecUnknownCRLExtension",
        "An unknown CRL extension was encountered."),
    .init(errSecCRLNotTrusted, "errSecCRLNotTrusted", "The CRL is not trusted."),
    .init(errSecCRLPolicyFailed, "errSecCRLPolicyFailed", "The CRL policy failed."),
    .init(
        errSecIDPFailure, "errSecIDPFailure", "The issuing distribution point was not valid."),
    .init(
        errSecSMIMEEmailAddressesNotFound, "errSecSMIMEEmailAddressesNotFound",
        "An email address mismatch was encountered."),
    .init(
        errSecSMIMEBadExtendedKeyUsage, "errSecSMIMEBadExtendedKeyUsage",
        "The appropriate extended key usage for SMIME was not found."),
    .init(
        errSecSMIMEBadKeyUsage, "errSecSMIMEBadKeyUsage",
        "The key usage is not compatible with SMIME."),
    .init(
        errSecSMIMEKeyUsageNotCritical, "errSecSMIMEKeyUsageNotCritical",
        "The key usage extension is not marked as critical."),
    .init(
        errSecSMIMENoEmailAddress, "errSecSMIMENoEmailAddress",
        "No email address was found in the certificate."),
    .init(
        errSecSMIMESubjAltNameNotCritical, "errSecSMIMESubjAltNameNotCritical",
        "The subject alternative name extension is not marked as critical."),
    .init(
        errSecSSLBadExtendedKeyUsage, "errSecSSLBadExtendedKeyUsage",
        "The appropriate extended key usage for SSL was not found."),
    .init(
        errSecOCSPBadResponse, "errSecOCSPBadResponse",
        "The OCSP response was incorrect or could not be parsed."),
    .init(
        errSecOCSPBadRequest, "errSecOCSPBadRequest",
        "The OCSP request was incorrect or could not be parsed."),
    .init(
        errSecOCSPUnavailable, "errSecOCSPUnavailable", "OCSP service is unavailable."),
    .init(
        errSecOCSPStatusUnrecognized, "errSecOCSPStatusUnrecognized",
        "The OCSP server did not recognize this certificate."),
    .init(errSecEndOfData, "errSecEndOfData", "An end-of-data was detected."),
    .init(
        errSecIncompleteCertRevocationCheck, "errSecIncompleteCertRevocationCheck",
        "An incomplete certificate revocation check occurred."),
    .init(
        errSecNetworkFailure, "errSecNetworkFailure", "A network failure occurred."),
    .init(
        errSecOCSPNotTrustedToAnchor, "errSecOCSPNotTrustedToAnchor",
        "The OCSP response was not trusted to a root or anchor certificate."),
    .init(errSecRecordModified, "errSecRecordModified", "The record was modified."),
    .init(
        errSecOCSPSignatureError, "errSecOCSPSignatureError",
        "The OCSP response had an invalid signature."),
    .init(
        errSecOCSPNoSigner, "errSecOCSPNoSigner", "The OCSP response had no signer."),
    .init(
        errSecOCSPResponderMalformedReq, "errSecOCSPResponderMalformedReq",
        "The OCSP responder was given a malformed request."),
    .init(
        errSecOCSPResponderInternalError, "errSecOCSPResponderInternalError",
        "The OCSP responder encountered an internal error."),
    .init(
        errSecOCSPResponderTryLater, "errSecOCSPResponderTryLater",
        "The OCSP responder is busy, try again later."),
    .init(
        errSecOCSPResponderSignatureRequired, "errSecOCSPResponderSignatureRequired",
        "The OCSP responder requires a signature."),
    .init(
        errSecOCSPResponderUnauthorized, "errSecOCSPResponderUnauthorized",
        "The OCSP responder rejected this request as unauthorized."),
    .init(
        errSecOCSPResponseNonceMismatch, "errSecOCSPResponseNonceMismatch",
        "The OCSP response nonce did not match the request."),
    .init(
        errSecCodeSigningBadCertChainLength, "errSecCodeSigningBadCertChainLength",
        "Code signing encountered an incorrect certificate chain length."),
    .init(
        errSecCodeSigningNoBasicConstraints, "errSecCodeSigningNoBasicConstraints",
        "Code signing found no basic constraints."),
    .init(
        errSecCodeSigningBadPathLengthConstraint, "errSecCodeSigningBadPathLengthConstraint",
        "Code signing encountered an incorrect path length constraint."),
    .init(
        errSecCodeSigningNoExtendedKeyUsage, "errSecCodeSigningNoExtendedKeyUsage",
        "Code signing found no extended key usage."),
    .init(
        errSecCodeSigningDevelopment, "errSecCodeSigningDevelopment",
        "Code signing indicated use of a development-only certificate."),
    .init(
        errSecResourceSignBadCertChainLength, "errSecResourceSignBadCertChainLength",
        "Resource signing has encountered an incorrect certificate chain length."),
    .init(
        errSecResourceSignBadExtKeyUsage, "errSecResourceSignBadExtKeyUsage",
        "Resource signing has encountered an error in the extended key usage."),
    .init(
        errSecTrustSettingDeny, "errSecTrustSettingDeny",
        "The trust setting for this policy was set to Deny."),
    .init(
        errSecInvalidSubjectName, "errSecInvalidSubjectName",
        "An invalid certificate subject name was encountered."),
    .init(
        errSecUnknownQualifiedCertStatement, "errSecUnknownQualifiedCertStatement",
        "An unknown qualified certificate statement was encountered."),
    .init(errSecMobileMeRequestQueued, "errSecMobileMeRequestQueued", nil),
    .init(errSecMobileMeRequestRedirected, "errSecMobileMeRequestRedirected", nil),
    .init(errSecMobileMeServerError, "errSecMobileMeServerError", nil),
    .init(errSecMobileMeServerNotAvailable, "errSecMobileMeServerNotAvailable", nil),
    .init(
        errSecMobileMeServerAlreadyExists, "errSecMobileMeServerAlreadyExists", nil),
    .init(errSecMobileMeServerServiceErr, "errSecMobileMeServerServiceErr", nil),
    .init(
        errSecMobileMeRequestAlreadyPending, "errSecMobileMeRequestAlreadyPending", nil),
    .init(errSecMobileMeNoRequestPending, "errSecMobileMeNoRequestPending", nil),
    .init(errSecMobileMeCSRVerifyFailure, "errSecMobileMeCSRVerifyFailure", nil),
    .init(
        errSecMobileMeFailedConsistencyCheck, "errSecMobileMeFailedConsistencyCheck", nil),
    .init(
        errSecNotInitialized, "errSecNotInitialized",
        "A function was called without initializing CSSM."),
    .init(
        errSecInvalidHandleUsage, "errSecInvalidHandleUsage",
        "The CSSM handle does not match with the service type."),
    .init(
        errSecPVCReferentNotFound, "errSecPVCReferentNotFound",
        "A reference to the calling module was not found in the list of authorized callers."),
    .init(
        errSecFunctionIntegrityFail, "errSecFunctionIntegrityFail",
        "A function address was not within the verified module."),
    .init(
        errSecInternalError, "errSecInternalError", "An internal error has occurred."),
    .init(errSecMemoryError, "errSecMemoryError", "A memory error has occurred."),
    .init(errSecInvalidData, "errSecInvalidData", "Invalid data was encountered."),
    .init(
        errSecMDSError, "errSecMDSError", "A Module Directory Service error has occurred."),
    .init(
        errSecInvalidPointer, "errSecInvalidPointer", "An invalid pointer was encountered."),
    .init(errSecSelfCheckFailed, "errSecSelfCheckFailed", "Self-check has failed."),
    .init(errSecFunctionFailed, "errSecFunctionFailed", "A function has failed."),
    .init(
        errSecModuleManifestVerifyFailed, "errSecModuleManifestVerifyFailed",
        "A module manifest verification failure has occurred."),
    .init(
        errSecInvalidGUID, "errSecInvalidGUID", "An invalid GUID was encountered."),
    .init(
        errSecInvalidHandle, "errSecInvalidHandle", "An invalid handle was encountered."),
    .init(
        errSecInvalidDBList, "errSecInvalidDBList", "An invalid DB list was encountered."),
    .init(
        errSecInvalidPassthroughID, "errSecInvalidPassthroughID",
        "An invalid passthrough ID was encountered."),
    .init(
        errSecInvalidNetworkAddress, "errSecInvalidNetworkAddress",
        "An invalid network address was encountered."),
    .init(
        errSecCRLAlreadySigned, "errSecCRLAlreadySigned",
        "The certificate revocation list is already signed."),
    .init(
        errSecInvalidNumberOfFields, "errSecInvalidNumberOfFields",
        "An invalid number of fields were encountered."),
    .init(
        errSecVerificationFailure, "errSecVerificationFailure", "A verification failure occurred."),
    .init(errSecUnknownTag, "errSecUnknownTag", "An unknown tag was encountered."),
    .init(
        errSecInvalidSignature, "errSecInvalidSignature", "An invalid signature was encountered."),
    .init(
        errSecInvalidName, "errSecInvalidName", "An invalid name was encountered."),
    .init(
        errSecInvalidCertificateRef, "errSecInvalidCertificateRef",
        "An invalid certificate reference was encountered."),
    .init(
        errSecInvalidCertificateGroup, "errSecInvalidCertificateGroup",
        "An invalid certificate group was encountered."),
    .init(
        errSecTagNotFound, "errSecTagNotFound", "The specified tag was not found."),
    .init(
        errSecInvalidQuery, "errSecInvalidQuery", "The specified query was not valid."),
    .init(
        errSecInvalidValue, "errSecInvalidValue", "An invalid value was detected."),
    .init(errSecCallbackFailed, "errSecCallbackFailed", "A callback has failed."),
    .init(
        errSecACLDeleteFailed, "errSecACLDeleteFailed", "An ACL delete operation has failed."),
    .init(
        errSecACLReplaceFailed, "errSecACLReplaceFailed", "An ACL replace operation has failed."),
    .init(
        errSecACLAddFailed, "errSecACLAddFailed", "An ACL add operation has failed."),
    .init(
        errSecACLChangeFailed, "errSecACLChangeFailed", "An ACL change operation has failed."),
    .init(
        errSecInvalidAccessCredentials, "errSecInvalidAccessCredentials",
        "Invalid access credentials were encountered."),
    .init(
        errSecInvalidRecord, "errSecInvalidRecord", "An invalid record was encountered."),
    .init(errSecInvalidACL, "errSecInvalidACL", "An invalid ACL was encountered."),
    .init(
        errSecInvalidSampleValue, "errSecInvalidSampleValue",
        "An invalid sample value was encountered."),
    .init(
        errSecIncompatibleVersion, "errSecIncompatibleVersion",
        "An incompatible version was encountered."),
    .init(
        errSecPrivilegeNotGranted, "errSecPrivilegeNotGranted", "The privilege was not granted."),
    .init(
        errSecInvalidScope, "errSecInvalidScope", "An invalid scope was encountered."),
    .init(
        errSecPVCAlreadyConfigured, "errSecPVCAlreadyConfigured", "The PVC is already configured."),
    .init(errSecInvalidPVC, "errSecInvalidPVC", "An invalid PVC was encountered."),
    .init(errSecEMMLoadFailed, "errSecEMMLoadFailed", "The EMM load has failed."),
    .init(
        errSecEMMUnloadFailed, "errSecEMMUnloadFailed", "The EMM unload has failed."),
    .init(
        errSecAddinLoadFailed, "errSecAddinLoadFailed", "The add-in load operation has failed."),
    .init(
        errSecInvalidKeyRef, "errSecInvalidKeyRef", "An invalid key was encountered."),
    .init(
        errSecInvalidKeyHierarchy, "errSecInvalidKeyHierarchy",
        "An invalid key hierarchy was encountered."),
    .init(
        errSecAddinUnloadFailed, "errSecAddinUnloadFailed",
        "The add-in unload operation has failed."),
    .init(
        errSecLibraryReferenceNotFound, "errSecLibraryReferenceNotFound",
        "A library reference was not found."),
    .init(
        errSecInvalidAddinFunctionTable, "errSecInvalidAddinFunctionTable",
        "An invalid add-in function table was encountered."),
    .init(
        errSecInvalidServiceMask, "errSecInvalidServiceMask",
        "An invalid service mask was encountered."),
    .init(
        errSecModuleNotLoaded, "errSecModuleNotLoaded", "A module was not loaded."),
    .init(
        errSecInvalidSubServiceID, "errSecInvalidSubServiceID",
        "An invalid subservice ID was encountered."),
    .init(
        errSecAttributeNotInContext, "errSecAttributeNotInContext",
        "An attribute was not in the context."),
    .init(
        errSecModuleManagerInitializeFailed, "errSecModuleManagerInitializeFailed",
        "A module failed to initialize."),
    .init(
        errSecModuleManagerNotFound, "errSecModuleManagerNotFound", "A module was not found."),
    .init(
        errSecEventNotificationCallbackNotFound, "errSecEventNotificationCallbackNotFound",
        "An event notification callback was not found."),
    .init(
        errSecInputLengthError, "errSecInputLengthError", "An input length error was encountered."),
    .init(
        errSecOutputLengthError, "errSecOutputLengthError",
        "An output length error was encountered."),
    .init(
        errSecPrivilegeNotSupported, "errSecPrivilegeNotSupported",
        "The privilege is not supported."),
    .init(errSecDeviceError, "errSecDeviceError", "A device error was encountered."),
    .init(
        errSecAttachHandleBusy, "errSecAttachHandleBusy", "The CSP handle was busy."),
    .init(errSecNotLoggedIn, "errSecNotLoggedIn", "You are not logged in."),
    .init(
        errSecAlgorithmMismatch, "errSecAlgorithmMismatch", "An algorithm mismatch was encountered."
    ),
    .init(
        errSecKeyUsageIncorrect, "errSecKeyUsageIncorrect", "The key usage is incorrect."),
    .init(
        errSecKeyBlobTypeIncorrect, "errSecKeyBlobTypeIncorrect", "The key blob type is incorrect."),
    .init(
        errSecKeyHeaderInconsistent, "errSecKeyHeaderInconsistent",
        "The key header is inconsistent."),
    .init(
        errSecUnsupportedKeyFormat, "errSecUnsupportedKeyFormat",
        "The key header format is not supported."),
    .init(
        errSecUnsupportedKeySize, "errSecUnsupportedKeySize", "The key size is not supported."),
    .init(
        errSecInvalidKeyUsageMask, "errSecInvalidKeyUsageMask", "The key usage mask is not valid."),
    .init(
        errSecUnsupportedKeyUsageMask, "errSecUnsupportedKeyUsageMask",
        "The key usage mask is not supported."),
    .init(
        errSecInvalidKeyAttributeMask, "errSecInvalidKeyAttributeMask",
        "The key attribute mask is not valid."),
    .init(
        errSecUnsupportedKeyAttributeMask, "errSecUnsupportedKeyAttributeMask",
        "The key attribute mask is not supported."),
    .init(
        errSecInvalidKeyLabel, "errSecInvalidKeyLabel", "The key label is not valid."),
    .init(
        errSecUnsupportedKeyLabel, "errSecUnsupportedKeyLabel", "The key label is not supported."),
    .init(
        errSecInvalidKeyFormat, "errSecInvalidKeyFormat", "The key format is not valid."),
    .init(
        errSecUnsupportedVectorOfBuffers, "errSecUnsupportedVectorOfBuffers",
        "The vector of buffers is not supported."),
    .init(
        errSecInvalidInputVector, "errSecInvalidInputVector", "The input vector is not valid."),
    .init(
        errSecInvalidOutputVector, "errSecInvalidOutputVector", "The output vector is not valid."),
    .init(
        errSecInvalidContext, "errSecInvalidContext", "An invalid context was encountered."),
    .init(
        errSecInvalidAlgorithm, "errSecInvalidAlgorithm", "An invalid algorithm was encountered."),
    .init(
        errSecInvalidAttributeKey, "errSecInvalidAttributeKey", "A key attribute was not valid."),
    .init(
        errSecMissingAttributeKey, "errSecMissingAttributeKey", "A key attribute was missing."),
    .init(
        errSecInvalidAttributeInitVector, "errSecInvalidAttributeInitVector",
        "An init vector attribute was not valid."),
    .init(
        errSecMissingAttributeInitVector, "errSecMissingAttributeInitVector",
        "An init vector attribute was missing."),
    .init(
        errSecInvalidAttributeSalt, "errSecInvalidAttributeSalt", "A salt attribute was not valid."),
    .init(
        errSecMissingAttributeSalt, "errSecMissingAttributeSalt", "A salt attribute was missing."),
    .init(
        errSecInvalidAttributePadding, "errSecInvalidAttributePadding",
        "A padding attribute was not valid."),
    .init(
        errSecMissingAttributePadding, "errSecMissingAttributePadding",
        "A padding attribute was missing."),
    .init(
        errSecInvalidAttributeRandom, "errSecInvalidAttributeRandom",
        "A random number attribute was not valid."),
    .init(
        errSecMissingAttributeRandom, "errSecMissingAttributeRandom",
        "A random number attribute was missing."),
    .init(
        errSecInvalidAttributeSeed, "errSecInvalidAttributeSeed", "A seed attribute was not valid."),
    .init(
        errSecMissingAttributeSeed, "errSecMissingAttributeSeed", "A seed attribute was missing."),
    .init(
        errSecInvalidAttributePassphrase, "errSecInvalidAttributePassphrase",
        "A passphrase attribute was not valid."),
    .init(
        errSecMissingAttributePassphrase, "errSecMissingAttributePassphrase",
        "A passphrase attribute was missing."),
    .init(
        errSecInvalidAttributeKeyLength, "errSecInvalidAttributeKeyLength",
        "A key length attribute was not valid."),
    .init(
        errSecMissingAttributeKeyLength, "errSecMissingAttributeKeyLength",
        "A key length attribute was missing."),
    .init(
        errSecInvalidAttributeBlockSize, "errSecInvalidAttributeBlockSize",
        "A block size attribute was not valid."),
    .init(
        errSecMissingAttributeBlockSize, "errSecMissingAttributeBlockSize",
        "A block size attribute was missing."),
    .init(
        errSecInvalidAttributeOutputSize, "errSecInvalidAttributeOutputSize",
        "An output size attribute was not valid."),
    .init(
        errSecMissingAttributeOutputSize, "errSecMissingAttributeOutputSize",
        "An output size attribute was missing."),
    .init(
        errSecInvalidAttributeRounds, "errSecInvalidAttributeRounds",
        "The number of rounds attribute was not valid."),
    .init(
        errSecMissingAttributeRounds, "errSecMissingAttributeRounds",
        "The number of rounds attribute was missing."),
    .init(
        errSecInvalidAlgorithmParms, "errSecInvalidAlgorithmParms",
        "An algorithm parameters attribute was not valid."),
    .init(
        errSecMissingAlgorithmParms, "errSecMissingAlgorithmParms",
        "An algorithm parameters attribute was missing."),
    .init(
        errSecInvalidAttributeLabel, "errSecInvalidAttributeLabel",
        "A label attribute was not valid."),
    .init(
        errSecMissingAttributeLabel, "errSecMissingAttributeLabel", "A label attribute was missing."
    ),
    .init(
        errSecInvalidAttributeKeyType, "errSecInvalidAttributeKeyType",
        "A key type attribute was not valid."),
    .init(
        errSecMissingAttributeKeyType, "errSecMissingAttributeKeyType",
        "A key type attribute was missing."),
    .init(
        errSecInvalidAttributeMode, "errSecInvalidAttributeMode", "A mode attribute was not valid."),
    .init(
        errSecMissingAttributeMode, "errSecMissingAttributeMode", "A mode attribute was missing."),
    .init(
        errSecInvalidAttributeEffectiveBits, "errSecInvalidAttributeEffectiveBits",
        "An effective bits attribute was not valid."),
    .init(
        errSecMissingAttributeEffectiveBits, "errSecMissingAttributeEffectiveBits",
        "An effective bits attribute was missing."),
    .init(
        errSecInvalidAttributeStartDate, "errSecInvalidAttributeStartDate",
        "A start date attribute was not valid."),
    .init(
        errSecMissingAttributeStartDate, "errSecMissingAttributeStartDate",
        "A start date attribute was missing."),
    .init(
        errSecInvalidAttributeEndDate, "errSecInvalidAttributeEndDate",
        "An end date attribute was not valid."),
    .init(
        errSecMissingAttributeEndDate, "errSecMissingAttributeEndDate",
        "An end date attribute was missing."),
    .init(
        errSecInvalidAttributeVersion, "errSecInvalidAttributeVersion",
        "A version attribute was not valid."),
    .init(
        errSecMissingAttributeVersion, "errSecMissingAttributeVersion",
        "A version attribute was missing."),
    .init(
        errSecInvalidAttributePrime, "errSecInvalidAttributePrime",
        "A prime attribute was not valid."),
    .init(
        errSecMissingAttributePrime, "errSecMissingAttributePrime", "A prime attribute was missing."
    ),
    .init(
        errSecInvalidAttributeBase, "errSecInvalidAttributeBase", "A base attribute was not valid."),
    .init(
        errSecMissingAttributeBase, "errSecMissingAttributeBase", "A base attribute was missing."),
    .init(
        errSecInvalidAttributeSubprime, "errSecInvalidAttributeSubprime",
        "A subprime attribute was not valid."),
    .init(
        errSecMissingAttributeSubprime, "errSecMissingAttributeSubprime",
        "A subprime attribute was missing."),
    .init(
        errSecInvalidAttributeIterationCount, "errSecInvalidAttributeIterationCount",
        "An iteration count attribute was not valid."),
    .init(
        errSecMissingAttributeIterationCount, "errSecMissingAttributeIterationCount",
        "An iteration count attribute was missing."),
    .init(
        errSecInvalidAttributeDLDBHandle, "errSecInvalidAttributeDLDBHandle",
        "A database handle attribute was not valid."),
    .init(
        errSecMissingAttributeDLDBHandle, "errSecMissingAttributeDLDBHandle",
        "A database handle attribute was missing."),
    .init(
        errSecInvalidAttributeAccessCredentials, "errSecInvalidAttributeAccessCredentials",
        "An access credentials attribute was not valid."),
    .init(
        errSecMissingAttributeAccessCredentials, "errSecMissingAttributeAccessCredentials",
        "An access credentials attribute was missing."),
    .init(
        errSecInvalidAttributePublicKeyFormat, "errSecInvalidAttributePublicKeyFormat",
        "A public key format attribute was not valid."),
    .init(
        errSecMissingAttributePublicKeyFormat, "errSecMissingAttributePublicKeyFormat",
        "A public key format attribute was missing."),
    .init(
        errSecInvalidAttributePrivateKeyFormat, "errSecInvalidAttributePrivateKeyFormat",
        "A private key format attribute was not valid."),
    .init(
        errSecMissingAttributePrivateKeyFormat, "errSecMissingAttributePrivateKeyFormat",
        "A private key format attribute was missing."),
    .init(
        errSecInvalidAttributeSymmetricKeyFormat, "errSecInvalidAttributeSymmetricKeyFormat",
        "A symmetric key format attribute was not valid."),
    .init(
        errSecMissingAttributeSymmetricKeyFormat, "errSecMissingAttributeSymmetricKeyFormat",
        "A symmetric key format attribute was missing."),
    .init(
        errSecInvalidAttributeWrappedKeyFormat, "errSecInvalidAttributeWrappedKeyFormat",
        "A wrapped key format attribute was not valid."),
    .init(
        errSecMissingAttributeWrappedKeyFormat, "errSecMissingAttributeWrappedKeyFormat",
        "A wrapped key format attribute was missing."),
    .init(
        errSecStagedOperationInProgress, "errSecStagedOperationInProgress",
        "A staged operation is in progress."),
    .init(
        errSecStagedOperationNotStarted, "errSecStagedOperationNotStarted",
        "A staged operation was not started."),
    .init(
        errSecVerifyFailed, "errSecVerifyFailed",
        "A cryptographic verification failure has occurred."),
    .init(
        errSecQuerySizeUnknown, "errSecQuerySizeUnknown", "The query size is unknown."),
    .init(
        errSecBlockSizeMismatch, "errSecBlockSizeMismatch", "A block size mismatch occurred."),
    .init(
        errSecPublicKeyInconsistent, "errSecPublicKeyInconsistent",
        "The public key was inconsistent."),
    .init(
        errSecDeviceVerifyFailed, "errSecDeviceVerifyFailed",
        "A device verification failure has occurred."),
    .init(
        errSecInvalidLoginName, "errSecInvalidLoginName", "An invalid login name was detected."),
    .init(
        errSecAlreadyLoggedIn, "errSecAlreadyLoggedIn", "The user is already logged in."),
    .init(
        errSecInvalidDigestAlgorithm, "errSecInvalidDigestAlgorithm",
        "An invalid digest algorithm was detected."),
    .init(
        errSecInvalidCRLGroup, "errSecInvalidCRLGroup", "An invalid CRL group was detected."),
    .init(
        errSecCertificateCannotOperate, "errSecCertificateCannotOperate",
        "The certificate cannot operate."),
    .init(
        errSecCertificateExpired, "errSecCertificateExpired", "An expired certificate was detected."
    ),
    .init(
        errSecCertificateNotValidYet, "errSecCertificateNotValidYet",
        "The certificate is not yet valid."),
    .init(
        errSecCertificateRevoked, "errSecCertificateRevoked", "The certificate was revoked."),
    .init(
        errSecCertificateSuspended, "errSecCertificateSuspended", "The certificate was suspended."),
    .init(
        errSecInsufficientCredentials, "errSecInsufficientCredentials",
        "Insufficient credentials were detected."),
    .init(errSecInvalidAction, "errSecInvalidAction", "The action was not valid."),
    .init(
        errSecInvalidAuthority, "errSecInvalidAuthority", "The authority was not valid."),
    .init(
        errSecVerifyActionFailed, "errSecVerifyActionFailed", "A verify action has failed."),
    .init(
        errSecInvalidCertAuthority, "errSecInvalidCertAuthority",
        "The certificate authority was not valid."),
    .init(
        errSecInvalidCRLAuthority, "errSecInvalidCRLAuthority", "The CRL authority was not valid."),
    .init(
        errSecInvalidCRLEncoding, "errSecInvalidCRLEncoding", "The CRL encoding was not valid."),
    .init(
        errSecInvalidCRLType, "errSecInvalidCRLType", "The CRL type was not valid."),
    .init(errSecInvalidCRL, "errSecInvalidCRL", "The CRL was not valid."),
    .init(
        errSecInvalidFormType, "errSecInvalidFormType", "The form type was not valid."),
    .init(errSecInvalidID, "errSecInvalidID", "The ID was not valid."),
    .init(
        errSecInvalidIdentifier, "errSecInvalidIdentifier", "The identifier was not valid."),
    .init(errSecInvalidIndex, "errSecInvalidIndex", "The index was not valid."),
    .init(
        errSecInvalidPolicyIdentifiers, "errSecInvalidPolicyIdentifiers",
        "The policy identifiers are not valid."),
    .init(
        errSecInvalidTimeString, "errSecInvalidTimeString", "The time specified was not valid."),
    .init(
        errSecInvalidReason, "errSecInvalidReason", "The trust policy reason was not valid."),
    .init(
        errSecInvalidRequestInputs, "errSecInvalidRequestInputs",
        "The request inputs are not valid."),
    .init(
        errSecInvalidResponseVector, "errSecInvalidResponseVector",
        "The response vector was not valid."),
    .init(
        errSecInvalidStopOnPolicy, "errSecInvalidStopOnPolicy", "The stop-on policy was not valid."),
    .init(errSecInvalidTuple, "errSecInvalidTuple", "The tuple was not valid."),
    .init(
        errSecMultipleValuesUnsupported, "errSecMultipleValuesUnsupported",
        "Multiple values are not supported."),
    .init(errSecNotTrusted, "errSecNotTrusted", "The certificate was not trusted."),
    .init(
        errSecNoDefaultAuthority, "errSecNoDefaultAuthority", "No default authority was detected."),
    .init(
        errSecRejectedForm, "errSecRejectedForm", "The trust policy had a rejected form."),
    .init(errSecRequestLost, "errSecRequestLost", "The request was lost."),
    .init(
        errSecRequestRejected, "errSecRequestRejected", "The request was rejected."),
    .init(
        errSecUnsupportedAddressType, "errSecUnsupportedAddressType",
        "The address type is not supported."),
    .init(
        errSecUnsupportedService, "errSecUnsupportedService", "The service is not supported."),
    .init(
        errSecInvalidTupleGroup, "errSecInvalidTupleGroup", "The tuple group was not valid."),
    .init(
        errSecInvalidBaseACLs, "errSecInvalidBaseACLs", "The base ACLs are not valid."),
    .init(
        errSecInvalidTupleCredentials, "errSecInvalidTupleCredentials",
        "The tuple credentials are not valid."),
    .init(
        errSecInvalidEncoding, "errSecInvalidEncoding", "The encoding was not valid."),
    .init(
        errSecInvalidValidityPeriod, "errSecInvalidValidityPeriod",
        "The validity period was not valid."),
    .init(
        errSecInvalidRequestor, "errSecInvalidRequestor", "The requestor was not valid."),
    .init(
        errSecRequestDescriptor, "errSecRequestDescriptor", "The request descriptor was not valid."),
    .init(
        errSecInvalidBundleInfo, "errSecInvalidBundleInfo", "The bundle information was not valid."),
    .init(
        errSecInvalidCRLIndex, "errSecInvalidCRLIndex", "The CRL index was not valid."),
    .init(
        errSecNoFieldValues, "errSecNoFieldValues", "No field values were detected."),
    .init(
        errSecUnsupportedFieldFormat, "errSecUnsupportedFieldFormat",
        "The field format is not supported."),
    .init(
        errSecUnsupportedIndexInfo, "errSecUnsupportedIndexInfo",
        "The index information is not supported."),
    .init(
        errSecUnsupportedLocality, "errSecUnsupportedLocality", "The locality is not supported."),
    .init(
        errSecUnsupportedNumAttributes, "errSecUnsupportedNumAttributes",
        "The number of attributes is not supported."),
    .init(
        errSecUnsupportedNumIndexes, "errSecUnsupportedNumIndexes",
        "The number of indexes is not supported."),
    .init(
        errSecUnsupportedNumRecordTypes, "errSecUnsupportedNumRecordTypes",
        "The number of record types is not supported."),
    .init(
        errSecFieldSpecifiedMultiple, "errSecFieldSpecifiedMultiple",
        "Too many fields were specified."),
    .init(
        errSecIncompatibleFieldFormat, "errSecIncompatibleFieldFormat",
        "The field format was incompatible."),
    .init(
        errSecInvalidParsingModule, "errSecInvalidParsingModule",
        "The parsing module was not valid."),
    .init(errSecDatabaseLocked, "errSecDatabaseLocked", "The database is locked."),
    .init(errSecDatastoreIsOpen, "errSecDatastoreIsOpen", "The data store is open."),
    .init(errSecMissingValue, "errSecMissingValue", "A missing value was detected."),
    .init(
        errSecUnsupportedQueryLimits, "errSecUnsupportedQueryLimits",
        "The query limits are not supported."),
    .init(
        errSecUnsupportedNumSelectionPreds, "errSecUnsupportedNumSelectionPreds",
        "The number of selection predicates is not supported."),
    .init(
        errSecUnsupportedOperator, "errSecUnsupportedOperator", "The operator is not supported."),
    .init(
        errSecInvalidDBLocation, "errSecInvalidDBLocation", "The database location is not valid."),
    .init(
        errSecInvalidAccessRequest, "errSecInvalidAccessRequest", "The access request is not valid."
    ),
    .init(
        errSecInvalidIndexInfo, "errSecInvalidIndexInfo", "The index information is not valid."),
    .init(
        errSecInvalidNewOwner, "errSecInvalidNewOwner", "The new owner is not valid."),
    .init(
        errSecInvalidModifyMode, "errSecInvalidModifyMode", "The modify mode is not valid."),
    .init(
        errSecMissingRequiredExtension, "errSecMissingRequiredExtension",
        "A required certificate extension is missing."),
    .init(
        errSecExtendedKeyUsageNotCritical, "errSecExtendedKeyUsageNotCritical",
        "The extended key usage extension was not marked critical."),
    .init(
        errSecTimestampMissing, "errSecTimestampMissing",
        "A timestamp was expected but was not found."),
    .init(
        errSecTimestampInvalid, "errSecTimestampInvalid", "The timestamp was not valid."),
    .init(
        errSecTimestampNotTrusted, "errSecTimestampNotTrusted", "The timestamp was not trusted."),
    .init(
        errSecTimestampServiceNotAvailable, "errSecTimestampServiceNotAvailable",
        "The timestamp service is not available."),
    .init(
        errSecTimestampBadAlg, "errSecTimestampBadAlg",
        "An unrecognized or unsupported Algorithm Identifier in timestamp."),
    .init(
        errSecTimestampBadRequest, "errSecTimestampBadRequest",
        "The timestamp transaction is not permitted or supported."),
    .init(
        errSecTimestampBadDataFormat, "errSecTimestampBadDataFormat",
        "The timestamp data submitted has the wrong format."),
    .init(
        errSecTimestampTimeNotAvailable, "errSecTimestampTimeNotAvailable",
        "The time source for the Timestamp Authority is not available."),
    .init(
        errSecTimestampUnacceptedPolicy, "errSecTimestampUnacceptedPolicy",
        "The requested policy is not supported by the Timestamp Authority."),
    .init(
        errSecTimestampUnacceptedExtension, "errSecTimestampUnacceptedExtension",
        "The requested extension is not supported by the Timestamp Authority."),
    .init(
        errSecTimestampAddInfoNotAvailable, "errSecTimestampAddInfoNotAvailable",
        "The additional information requested is not available."),
    .init(
        errSecTimestampSystemFailure, "errSecTimestampSystemFailure",
        "The timestamp request cannot be handled due to system failure."),
    .init(
        errSecSigningTimeMissing, "errSecSigningTimeMissing",
        "A signing time was expected but was not found."),
    .init(
        errSecTimestampRejection, "errSecTimestampRejection",
        "A timestamp transaction was rejected."),
    .init(
        errSecTimestampWaiting, "errSecTimestampWaiting", "A timestamp transaction is waiting."),
    .init(
        errSecTimestampRevocationWarning, "errSecTimestampRevocationWarning",
        "A timestamp authority revocation warning was issued."),
    .init(
        errSecTimestampRevocationNotification, "errSecTimestampRevocationNotification",
        "A timestamp authority revocation notification was issued."),
    .init(
        errSecCertificatePolicyNotAllowed, "errSecCertificatePolicyNotAllowed",
        "The requested policy is not allowed for this certificate."),
    .init(
        errSecCertificateNameNotAllowed, "errSecCertificateNameNotAllowed",
        "The requested name is not allowed for this certificate."),
    .init(
        errSecCertificateValidityPeriodTooLong, "errSecCertificateValidityPeriodTooLong",
        "The validity period in the certificate exceeds the maximum allowed."),
    .init(
        errSecCertificateIsCA, "errSecCertificateIsCA",
        "The verified certificate is a CA rather than an end-entity"),
    .init(
        errSecCertificateDuplicateExtension, "errSecCertificateDuplicateExtension",
        "The certificate contains multiple extensions with the same extension ID."),
    .init(
        errSecMissingQualifiedCertStatement, "errSecMissingQualifiedCertStatement",
        "A qualified certificate statement was expected but missing."),
    .init(errSSLProtocol, "errSSLProtocol", "SSL protocol error"),
    .init(
        errSSLNegotiation, "errSSLNegotiation", "Cipher Suite negotiation failure"),
    .init(errSSLFatalAlert, "errSSLFatalAlert", "Fatal alert"),
    .init(errSSLWouldBlock, "errSSLWouldBlock", "I/O would block (not fatal)"),
    .init(
        errSSLSessionNotFound, "errSSLSessionNotFound", "attempt to restore an unknown session"),
    .init(
        errSSLClosedGraceful, "errSSLClosedGraceful", "connection closed gracefully"),
    .init(errSSLClosedAbort, "errSSLClosedAbort", "connection closed via error"),
    .init(
        errSSLXCertChainInvalid, "errSSLXCertChainInvalid", "invalid certificate chain"),
    .init(errSSLBadCert, "errSSLBadCert", "bad certificate format"),
    .init(errSSLCrypto, "errSSLCrypto", "underlying cryptographic error"),
    .init(errSSLInternal, "errSSLInternal", "Internal error"),
    .init(errSSLModuleAttach, "errSSLModuleAttach", "module attach failure"),
    .init(
        errSSLUnknownRootCert, "errSSLUnknownRootCert", "valid cert chain, untrusted root"),
    .init(errSSLNoRootCert, "errSSLNoRootCert", "cert chain not verified by root"),
    .init(errSSLCertExpired, "errSSLCertExpired", "chain had an expired cert"),
    .init(
        errSSLCertNotYetValid, "errSSLCertNotYetValid", "chain had a cert not yet valid"),
    .init(
        errSSLClosedNoNotify, "errSSLClosedNoNotify", "server closed session with no notification"),
    .init(
        errSSLBufferOverflow, "errSSLBufferOverflow", "insufficient buffer provided"),
    .init(errSSLBadCipherSuite, "errSSLBadCipherSuite", "bad SSLCipherSuite"),
    .init(
        errSSLPeerUnexpectedMsg, "errSSLPeerUnexpectedMsg", "unexpected message received"),
    .init(errSSLPeerBadRecordMac, "errSSLPeerBadRecordMac", "bad MAC"),
    .init(errSSLPeerDecryptionFail, "errSSLPeerDecryptionFail", "decryption failed"),
    .init(errSSLPeerRecordOverflow, "errSSLPeerRecordOverflow", "record overflow"),
    .init(
        errSSLPeerDecompressFail, "errSSLPeerDecompressFail", "decompression failure"),
    .init(errSSLPeerHandshakeFail, "errSSLPeerHandshakeFail", "handshake failure"),
    .init(errSSLPeerBadCert, "errSSLPeerBadCert", "misc. bad certificate"),
    .init(
        errSSLPeerUnsupportedCert, "errSSLPeerUnsupportedCert", "bad unsupported cert format"),
    .init(errSSLPeerCertRevoked, "errSSLPeerCertRevoked", "certificate revoked"),
    .init(errSSLPeerCertExpired, "errSSLPeerCertExpired", "certificate expired"),
    .init(errSSLPeerCertUnknown, "errSSLPeerCertUnknown", "unknown certificate"),
    .init(errSSLIllegalParam, "errSSLIllegalParam", "illegal parameter"),
    .init(errSSLPeerUnknownCA, "errSSLPeerUnknownCA", "unknown Cert Authority"),
    .init(errSSLPeerAccessDenied, "errSSLPeerAccessDenied", "access denied"),
    .init(errSSLPeerDecodeError, "errSSLPeerDecodeError", "decoding error"),
    .init(errSSLPeerDecryptError, "errSSLPeerDecryptError", "decryption error"),
    .init(
        errSSLPeerExportRestriction, "errSSLPeerExportRestriction", "export restriction"),
    .init(
        errSSLPeerProtocolVersion, "errSSLPeerProtocolVersion", "bad protocol version"),
    .init(
        errSSLPeerInsufficientSecurity, "errSSLPeerInsufficientSecurity", "insufficient security"),
    .init(errSSLPeerInternalError, "errSSLPeerInternalError", "internal error"),
    .init(errSSLPeerUserCancelled, "errSSLPeerUserCancelled", "user canceled"),
    .init(
        errSSLPeerNoRenegotiation, "errSSLPeerNoRenegotiation", "no renegotiation allowed"),
    .init(
        errSSLPeerAuthCompleted, "errSSLPeerAuthCompleted",
        "peer cert is valid, or was ignored if verification disabled"),
    .init(
        errSSLClientCertRequested, "errSSLClientCertRequested", "server has requested a client cert"
    ),
    .init(
        errSSLHostNameMismatch, "errSSLHostNameMismatch", "peer host name mismatch"),
    .init(
        errSSLConnectionRefused, "errSSLConnectionRefused",
        "peer dropped connection before responding"),
    .init(errSSLDecryptionFail, "errSSLDecryptionFail", "decryption failure"),
    .init(errSSLBadRecordMac, "errSSLBadRecordMac", "bad MAC"),
    .init(errSSLRecordOverflow, "errSSLRecordOverflow", "record overflow"),
    .init(errSSLBadConfiguration, "errSSLBadConfiguration", "configuration error"),
    .init(
        errSSLUnexpectedRecord, "errSSLUnexpectedRecord", "unexpected (skipped) record in DTLS"),
    .init(
        errSSLWeakPeerEphemeralDHKey, "errSSLWeakPeerEphemeralDHKey", "weak ephemeral dh key"),
    .init(errSSLClientHelloReceived, "errSSLClientHelloReceived", "SNI"),
    .init(
        errSSLTransportReset, "errSSLTransportReset",
        "transport (socket) shutdown, e.g., TCP RST or FIN."),
    .init(errSSLNetworkTimeout, "errSSLNetworkTimeout", "network timeout triggered"),
    .init(
        errSSLConfigurationFailed, "errSSLConfigurationFailed", "TLS configuration failed"),
    .init(
        errSSLUnsupportedExtension, "errSSLUnsupportedExtension", "unsupported TLS extension"),
    .init(
        errSSLUnexpectedMessage, "errSSLUnexpectedMessage", "peer rejected unexpected message"),
    .init(errSSLDecompressFail, "errSSLDecompressFail", "decompression failed"),
    .init(errSSLHandshakeFail, "errSSLHandshakeFail", "handshake failed"),
    .init(errSSLDecodeError, "errSSLDecodeError", "decode failed"),
    .init(
        errSSLInappropriateFallback, "errSSLInappropriateFallback", "inappropriate fallback"),
    .init(errSSLMissingExtension, "errSSLMissingExtension", "missing extension"),
    .init(
        errSSLBadCertificateStatusResponse, "errSSLBadCertificateStatusResponse",
        "bad OCSP response"),
    .init(
        errSSLCertificateRequired, "errSSLCertificateRequired", "certificate required"),
    .init(
        errSSLUnknownPSKIdentity, "errSSLUnknownPSKIdentity", "unknown PSK identity"),
    .init(
        errSSLUnrecognizedName, "errSSLUnrecognizedName", "unknown or unrecognized name"),
    .init(errSSLATSViolation, "errSSLATSViolation", "ATS violation"),
    .init(
        errSSLATSMinimumVersionViolation, "errSSLATSMinimumVersionViolation",
        "ATS violation: minimum protocol version is not ATS compliant"),
    .init(
        errSSLATSCiphersuiteViolation, "errSSLATSCiphersuiteViolation",
        "ATS violation: selected ciphersuite is not ATS compliant"),
    .init(
        errSSLATSMinimumKeySizeViolation, "errSSLATSMinimumKeySizeViolation",
        "ATS violation: peer key size is not ATS compliant"),
    .init(
        errSSLATSLeafCertificateHashAlgorithmViolation,
        "errSSLATSLeafCertificateHashAlgorithmViolation",
        "ATS violation: peer leaf certificate hash algorithm is not ATS compliant"),
    .init(
        errSSLATSCertificateHashAlgorithmViolation, "errSSLATSCertificateHashAlgorithmViolation",
        "ATS violation: peer certificate hash algorithm is not ATS compliant"),
    .init(
        errSSLATSCertificateTrustViolation, "errSSLATSCertificateTrustViolation",
        "ATS violation: peer certificate is not issued by trusted peer"),
    .init(
        errSSLEarlyDataRejected, "errSSLEarlyDataRejected",
        "Early application data rejected by peer"),
]

/// ``secBaseStatusTable`` indexed by status code.
private let secBaseStatusIndex: [OSStatus: SecStatusDescription] = Dictionary(
    uniqueKeysWithValues: secBaseStatusTable.map { ($0.status, $0) })

/// The first status code that carries a POSIX `errno` value (`errSecErrnoBase` + errno).
private let errnoStatusBase: OSStatus = 100_000

/// The last status code that carries a POSIX `errno` value (`errSecErrnoLimit`).
private let errnoStatusLimit: OSStatus = 100_255

/// Returns the message `SecCopyErrorMessageString` gives for a status code.
///
/// - Parameter status: Any status code.
/// - Returns: The header message of a known code; the identifier of a known code without a
///   message; `UNIX[<strerror>]` for 100000…100255; otherwise `OSStatus <n>`.
package func secErrorMessage(_ status: OSStatus) -> String {
    if let known = secBaseStatusIndex[status] {
        return known.message ?? known.name
    }
    if (errnoStatusBase...errnoStatusLimit).contains(status) {
        return "UNIX[\(String(cString: strerror(status - errnoStatusBase)))]"
    }
    return "OSStatus \(status)"
}

/// Returns a string that describes a status code.
///
/// ```swift
/// let status = SecItemCopyMatching(query as CFDictionary, &result)
/// if status != errSecSuccess, let message = SecCopyErrorMessageString(status, nil) {
///     print(message)  // "The specified item could not be found in the keychain."
/// }
/// ```
///
/// Known codes give the message of Apple's `SecBase.h` (a code without one gives its name, such
/// as `errSecInternalComponent`); 100000…100255 give `UNIX[<strerror(status - 100000)>]` with the
/// C library's text; any other value gives `OSStatus <n>`.
///
/// - Parameters:
///   - status: A status code returned by a Security function.
///   - reserved: Reserved; pass `nil`.
/// - Returns: A new string; never `nil` on Linux.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?)
    -> CFString?
{
    NSString(string: secErrorMessage(status))
}
