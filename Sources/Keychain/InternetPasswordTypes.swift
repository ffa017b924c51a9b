/// The protocol of an Internet password (`kSecAttrProtocol`).
///
/// Raw values are Apple's four-character codes, so items are shared with code that uses
/// `SecItem*` and `kSecAttrProtocol…` constants. Unknown codes are kept as they are.
public struct ProtocolType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's four-character code, such as `"htps"`.
    public let rawValue: String

    /// Creates a protocol from its four-character code.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// FTP (`kSecAttrProtocolFTP`).
    public static let ftp = ProtocolType(rawValue: "ftp ")
    /// A client-side FTP account (`kSecAttrProtocolFTPAccount`).
    public static let ftpAccount = ProtocolType(rawValue: "ftpa")
    /// HTTP (`kSecAttrProtocolHTTP`).
    public static let http = ProtocolType(rawValue: "http")
    /// IRC (`kSecAttrProtocolIRC`).
    public static let irc = ProtocolType(rawValue: "irc ")
    /// NNTP (`kSecAttrProtocolNNTP`).
    public static let nntp = ProtocolType(rawValue: "nntp")
    /// POP3 (`kSecAttrProtocolPOP3`).
    public static let pop3 = ProtocolType(rawValue: "pop3")
    /// SMTP (`kSecAttrProtocolSMTP`).
    public static let smtp = ProtocolType(rawValue: "smtp")
    /// SOCKS (`kSecAttrProtocolSOCKS`).
    public static let socks = ProtocolType(rawValue: "sox ")
    /// IMAP (`kSecAttrProtocolIMAP`).
    public static let imap = ProtocolType(rawValue: "imap")
    /// LDAP (`kSecAttrProtocolLDAP`).
    public static let ldap = ProtocolType(rawValue: "ldap")
    /// AFP over AppleTalk (`kSecAttrProtocolAppleTalk`).
    public static let appleTalk = ProtocolType(rawValue: "atlk")
    /// AFP over TCP (`kSecAttrProtocolAFP`).
    public static let afp = ProtocolType(rawValue: "afp ")
    /// Telnet (`kSecAttrProtocolTelnet`).
    public static let telnet = ProtocolType(rawValue: "teln")
    /// SSH (`kSecAttrProtocolSSH`).
    public static let ssh = ProtocolType(rawValue: "ssh ")
    /// FTP over TLS (`kSecAttrProtocolFTPS`).
    public static let ftps = ProtocolType(rawValue: "ftps")
    /// HTTP over TLS (`kSecAttrProtocolHTTPS`).
    public static let https = ProtocolType(rawValue: "htps")
    /// An HTTP proxy (`kSecAttrProtocolHTTPProxy`).
    public static let httpProxy = ProtocolType(rawValue: "htpx")
    /// An HTTPS proxy (`kSecAttrProtocolHTTPSProxy`).
    public static let httpsProxy = ProtocolType(rawValue: "htsx")
    /// An FTP proxy (`kSecAttrProtocolFTPProxy`).
    public static let ftpProxy = ProtocolType(rawValue: "ftpx")
    /// SMB (`kSecAttrProtocolSMB`).
    public static let smb = ProtocolType(rawValue: "smb ")
    /// RTSP (`kSecAttrProtocolRTSP`).
    public static let rtsp = ProtocolType(rawValue: "rtsp")
    /// An RTSP proxy (`kSecAttrProtocolRTSPProxy`).
    public static let rtspProxy = ProtocolType(rawValue: "rtsx")
    /// DAAP (`kSecAttrProtocolDAAP`).
    public static let daap = ProtocolType(rawValue: "daap")
    /// Remote Apple Events (`kSecAttrProtocolEPPC`).
    public static let eppc = ProtocolType(rawValue: "eppc")
    /// IPP (`kSecAttrProtocolIPP`).
    public static let ipp = ProtocolType(rawValue: "ipp ")
    /// NNTP over TLS (`kSecAttrProtocolNNTPS`).
    public static let nntps = ProtocolType(rawValue: "ntps")
    /// LDAP over TLS (`kSecAttrProtocolLDAPS`).
    public static let ldaps = ProtocolType(rawValue: "ldps")
    /// Telnet over TLS (`kSecAttrProtocolTelnetS`).
    public static let telnetS = ProtocolType(rawValue: "tels")
    /// IMAP over TLS (`kSecAttrProtocolIMAPS`).
    public static let imaps = ProtocolType(rawValue: "imps")
    /// IRC over TLS (`kSecAttrProtocolIRCS`).
    public static let ircs = ProtocolType(rawValue: "ircs")
    /// POP3 over TLS (`kSecAttrProtocolPOP3S`).
    public static let pop3s = ProtocolType(rawValue: "pops")

    /// The four-character code.
    public var description: String { rawValue }
}

/// The authentication scheme of an Internet password (`kSecAttrAuthenticationType`).
///
/// Raw values are Apple's four-character codes.
public struct AuthenticationType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's four-character code, such as `"dflt"`.
    public let rawValue: String

    /// Creates a scheme from its four-character code.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Windows NTLM (`kSecAttrAuthenticationTypeNTLM`).
    public static let ntlm = AuthenticationType(rawValue: "ntlm")
    /// Microsoft Network (`kSecAttrAuthenticationTypeMSN`).
    public static let msn = AuthenticationType(rawValue: "msna")
    /// Distributed Password Authentication (`kSecAttrAuthenticationTypeDPA`).
    public static let dpa = AuthenticationType(rawValue: "dpaa")
    /// Remote Password Authentication (`kSecAttrAuthenticationTypeRPA`).
    public static let rpa = AuthenticationType(rawValue: "rpaa")
    /// HTTP Basic (`kSecAttrAuthenticationTypeHTTPBasic`).
    public static let httpBasic = AuthenticationType(rawValue: "http")
    /// HTTP Digest (`kSecAttrAuthenticationTypeHTTPDigest`).
    public static let httpDigest = AuthenticationType(rawValue: "httd")
    /// An HTML form (`kSecAttrAuthenticationTypeHTMLForm`).
    public static let htmlForm = AuthenticationType(rawValue: "form")
    /// The default scheme (`kSecAttrAuthenticationTypeDefault`).
    public static let `default` = AuthenticationType(rawValue: "dflt")

    /// The four-character code.
    public var description: String { rawValue }
}
