// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";

/// @notice Stand-in for USDC on a local chain: same name, symbol and decimals, minted by minters
/// that a master minter configures (the owner is both at deployment), as on Circle's FiatToken.
contract TestUSDC is ERC20, ERC20Permit, Ownable {
    constructor(address initialOwner) ERC20("USD Coin", "USDC") ERC20Permit("USD Coin") Ownable(initialOwner) {
        _initializeMinterRole(initialOwner);
        _minters[initialOwner] = true;
        _minterAllowed[initialOwner] = type(uint256).max;
        emit MinterConfigured(initialOwner, type(uint256).max);
    }

    // ------------------------------------------------------------------------------------------
    // FiatToken-style minter role (begin)
    //
    // The part of Circle's FiatToken that a developer uses to fund accounts on a fork of Base:
    // the master minter (`masterMinter()`) configures a minter with an allowance
    // (`configureMinter`), and minters `mint` within it. `npm start` in fork mode impersonates
    // `masterMinter()` to do exactly that; this token implements it so the path can be tested
    // on a chain of our own. At deployment the owner is master minter and an unlimited minter; a token
    // initialised by `initializeMinterRole` has a master minter and no minter yet, as on Base.
    //
    // `initializeMinterRole` exists for a copy of this token's runtime code placed with
    // `anvil_setCode` (no constructor runs, storage is empty): it names the master minter
    // once, only while there is none. A deployed token already has one, so it always refuses.
    // ------------------------------------------------------------------------------------------

    address private _masterMinter;
    mapping(address => bool) private _minters;
    mapping(address => uint256) private _minterAllowed;

    event MinterConfigured(address indexed minter, uint256 minterAllowedAmount);
    event MinterRemoved(address indexed oldMinter);
    event MasterMinterChanged(address indexed newMasterMinter);
    event Mint(address indexed minter, address indexed to, uint256 amount);

    modifier onlyMasterMinter() {
        require(msg.sender == _masterMinter, "FiatToken: caller is not the masterMinter");
        _;
    }

    modifier onlyMinters() {
        require(_minters[msg.sender], "FiatToken: caller is not a minter");
        _;
    }

    function masterMinter() external view returns (address) {
        return _masterMinter;
    }

    function isMinter(address account) external view returns (bool) {
        return _minters[account];
    }

    function minterAllowance(address minter) external view returns (uint256) {
        return _minterAllowed[minter];
    }

    function initializeMinterRole(address newMasterMinter) external {
        require(_masterMinter == address(0), "FiatToken: minter role already initialized");
        _initializeMinterRole(newMasterMinter);
    }

    function configureMinter(address minter, uint256 minterAllowedAmount) external onlyMasterMinter returns (bool) {
        _minters[minter] = true;
        _minterAllowed[minter] = minterAllowedAmount;
        emit MinterConfigured(minter, minterAllowedAmount);
        return true;
    }

    function removeMinter(address minter) external onlyMasterMinter returns (bool) {
        _minters[minter] = false;
        _minterAllowed[minter] = 0;
        emit MinterRemoved(minter);
        return true;
    }

    /// @dev FiatToken's checks: a minter, a non-zero recipient and amount, within the allowance.
    function _mintAsMinter(address to, uint256 amount) private {
        require(to != address(0), "FiatToken: mint to the zero address");
        require(amount > 0, "FiatToken: mint amount not greater than 0");
        uint256 allowed = _minterAllowed[msg.sender];
        require(amount <= allowed, "FiatToken: mint amount exceeds minterAllowance");
        if (allowed != type(uint256).max) _minterAllowed[msg.sender] = allowed - amount;
        _mint(to, amount);
        emit Mint(msg.sender, to, amount);
    }

    function _initializeMinterRole(address newMasterMinter) private {
        require(newMasterMinter != address(0), "FiatToken: new masterMinter is the zero address");
        _masterMinter = newMasterMinter;
        emit MasterMinterChanged(newMasterMinter);
    }

    // FiatToken-style minter role (end)
    // ------------------------------------------------------------------------------------------

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external onlyMinters returns (bool) {
        _mintAsMinter(to, amount);
        return true;
    }

    // ------------------------------------------------------------------------------------------
    // EIP-3009: transfer with authorization (begin)
    //
    // The holder signs EIP-712 typed data and anyone (the service's relayer) submits it, as
    // USDC does. The domain is this token's own EIP-712 domain (ERC-5267 `eip712Domain()`:
    // name "USD Coin"), shared with ERC-2612 permits as in USDC. Signatures are checked with
    // SignatureChecker, so a smart-contract wallet (EIP-1271) may authorize too. Both the
    // (v, r, s) and the `bytes signature` forms exist, as in USDC v2.2.
    // ------------------------------------------------------------------------------------------

    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH = keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");

    /// @dev authorizer => nonce => used or cancelled
    mapping(address => mapping(bytes32 => bool)) private _authorizationStates;

    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);

    /// @notice True once the nonce of `authorizer` was used or cancelled.
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
    }

    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        _transferWithAuthorization(from, to, value, validAfter, validBefore, nonce, signature);
    }

    /// @notice As transferWithAuthorization, but only the payee may submit it (no front-running of a deposit).
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _receiveWithAuthorization(from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v));
    }

    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        _receiveWithAuthorization(from, to, value, validAfter, validBefore, nonce, signature);
    }

    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        _cancelAuthorization(authorizer, nonce, abi.encodePacked(r, s, v));
    }

    function cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) external {
        _cancelAuthorization(authorizer, nonce, signature);
    }

    function _transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        _requireValidAuthorization(from, nonce, validAfter, validBefore);
        _requireSignedBy(
            from,
            keccak256(abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce)),
            signature
        );
        _markAuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    function _receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        require(to == msg.sender, "EIP3009: caller must be the payee");
        _requireValidAuthorization(from, nonce, validAfter, validBefore);
        _requireSignedBy(
            from,
            keccak256(abi.encode(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce)),
            signature
        );
        _markAuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    function _cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) private {
        require(!_authorizationStates[authorizer][nonce], "EIP3009: authorization is used or canceled");
        _requireSignedBy(authorizer, keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce)), signature);
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
    }

    function _requireValidAuthorization(address authorizer, bytes32 nonce, uint256 validAfter, uint256 validBefore)
        private
        view
    {
        require(block.timestamp > validAfter, "EIP3009: authorization is not yet valid");
        require(block.timestamp < validBefore, "EIP3009: authorization is expired");
        require(!_authorizationStates[authorizer][nonce], "EIP3009: authorization is used or canceled");
    }

    function _requireSignedBy(address signer, bytes32 structHash, bytes memory signature) private view {
        require(
            SignatureChecker.isValidSignatureNow(signer, _hashTypedDataV4(structHash), signature), "EIP3009: invalid signature"
        );
    }

    function _markAuthorizationUsed(address authorizer, bytes32 nonce) private {
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationUsed(authorizer, nonce);
    }

    // EIP-3009: transfer with authorization (end)
    // ------------------------------------------------------------------------------------------
}
