// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {Create2} from "@openzeppelin/contracts/utils/Create2.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @notice Test helper (never deployed outside the tests): the smallest smart-contract
/// wallet, which accepts a signature (EIP-1271) when its owner's key made it.
contract OwnedSmartWallet is IERC1271 {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address signer, ECDSA.RecoverError error, ) = ECDSA.tryRecover(hash, signature);
        if (error == ECDSA.RecoverError.NoError && signer == owner) return IERC1271.isValidSignature.selector;
        return 0xffffffff;
    }
}

/// @notice Deploys wallets at addresses known in advance (CREATE2), so a wallet can sign
/// before it exists (EIP-6492 wraps the signature with this factory's deploy call).
contract OwnedSmartWalletFactory {
    function deploy(address owner, bytes32 salt) external returns (address) {
        return address(new OwnedSmartWallet{salt: salt}(owner));
    }

    function predict(address owner, bytes32 salt) external view returns (address) {
        bytes memory code = abi.encodePacked(type(OwnedSmartWallet).creationCode, abi.encode(owner));
        return Create2.computeAddress(salt, keccak256(code));
    }
}
