// Code from seed document 001_1a990e3f71b862aa (a published Keychain tutorial), compiled as written
// (Swift 5 language mode).
// Only `import Security` at the top.

import Foundation
import Security

class KeychainAccess {

  func addKeychainData(itemKey: String, itemValue: String) throws {
    guard let valueData = itemValue.data(using: .utf8) else {
      print("Keychain: Unable to store data, invalid input - key: \(itemKey), value: \(itemValue)")
      return
    }
    
    // clean up existing data
    do {
      try deleteKeychainData(itemKey: itemKey)
    } catch {
      print("Keychain: nothing to delete...")
		}
    
    // bnild queary
    let queryAdd: [String: AnyObject] = [
      kSecClass as String: kSecClassGenericPassword,
      kSecAttrAccount as String: itemKey as AnyObject,
      kSecValueData as String: valueData as AnyObject,
      kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked
    ]
    let resultCode: OSStatus = SecItemAdd(queryAdd as CFDictionary, nil)
		
    if resultCode != 0 {
      print("Keychain: value not added - Error: \(resultCode)")
    } else {
      print("Keychain: value added successfully")
    }
  }
  
  func deleteKeychainData(itemKey: String) throws {
    let queryDelete: [String: AnyObject] = [
      kSecClass as String: kSecClassGenericPassword,
      kSecAttrAccount as String: itemKey as AnyObject
    ]
    
    let resultCodeDelete = SecItemDelete(queryDelete as CFDictionary)
		
    if resultCodeDelete != 0 {
      print("Keychain: unable to delete from keychain: \(resultCodeDelete)")
    } else {
      print("Keychain: successfully deleted item")
    }
  }
	
  func queryKeychainData (itemKey: String) throws -> String? {
    let queryLoad: [String: AnyObject] = [
      kSecClass as String: kSecClassGenericPassword,
      kSecAttrAccount as String: itemKey as AnyObject,
      kSecReturnData as String: kCFBooleanTrue,
      kSecMatchLimit as String: kSecMatchLimitOne
    ]
    
    var result: AnyObject?
    let resultCodeLoad = withUnsafeMutablePointer(to: &result) {
      SecItemCopyMatching(queryLoad as CFDictionary, UnsafeMutablePointer($0))
    }
		
    if resultCodeLoad != 0 {
      print("Keychain: unable to load data - \(resultCodeLoad)")
      return nil
    }
    
    guard let resultVal = result as? NSData, let keyValue = NSString(data: resultVal as Data, encoding: String.Encoding.utf8.rawValue) as String? else {
      print("Keychain: error parsing keychain result - \(resultCodeLoad)")
      return nil
    }
    
    return keyValue
  }
}

