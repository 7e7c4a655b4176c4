// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @notice ERC-5192 minimal soulbound interface (interface id 0xb45a3c0e); OpenZeppelin does not ship it.
interface IERC5192 {
    event Locked(uint256 tokenId);
    event Unlocked(uint256 tokenId);

    function locked(uint256 tokenId) external view returns (bool);
}

/// @notice Non-transferable purchase certificate, minted by the buyer with a voucher signed by the service.
contract CertificateNFT is ERC721, EIP712, Ownable, IERC5192 {
    struct Voucher {
        address buyer;
        bytes32 purchaseId;
        string tokenURI;
        uint256 deadline;
    }

    bytes32 public constant VOUCHER_TYPEHASH =
        keccak256("Voucher(address buyer,bytes32 purchaseId,string tokenURI,uint256 deadline)");

    address public voucherSigner;

    mapping(bytes32 purchaseId => bool) private _claimed;
    mapping(uint256 tokenId => string) private _tokenURIs;

    event CertificateClaimed(bytes32 indexed purchaseId, uint256 indexed tokenId, address indexed buyer);
    event CertificateRevoked(uint256 indexed tokenId, bytes32 indexed purchaseId, string reason);
    event VoucherSignerChanged(address indexed signer);

    error VoucherExpired();
    error SenderNotBuyer();
    error InvalidVoucherSignature();
    error AlreadyClaimed(bytes32 purchaseId);
    error Soulbound();

    constructor(string memory name, string memory symbol, address voucherSigner_, address initialOwner)
        ERC721(name, symbol)
        EIP712("Settlement Certificate", "1")
        Ownable(initialOwner)
    {
        _setVoucherSigner(voucherSigner_);
    }

    function claim(Voucher calldata voucher, bytes calldata signature) external returns (uint256 tokenId) {
        if (block.timestamp > voucher.deadline) revert VoucherExpired();
        if (msg.sender != voucher.buyer) revert SenderNotBuyer();
        if (!_isSignedByVoucherSigner(voucher, signature)) revert InvalidVoucherSignature();
        if (_claimed[voucher.purchaseId]) revert AlreadyClaimed(voucher.purchaseId);

        _claimed[voucher.purchaseId] = true;
        // The token id is the purchase id, so a retried claim can never mint a second certificate.
        tokenId = uint256(voucher.purchaseId);
        _tokenURIs[tokenId] = voucher.tokenURI;
        _mint(voucher.buyer, tokenId);
        emit Locked(tokenId);
        emit CertificateClaimed(voucher.purchaseId, tokenId, voucher.buyer);
    }

    /// @dev The purchase stays claimed, so a revoked certificate cannot be claimed again.
    function revoke(uint256 tokenId, string calldata reason) external onlyOwner {
        _burn(tokenId);
        delete _tokenURIs[tokenId];
        emit CertificateRevoked(tokenId, bytes32(tokenId), reason);
    }

    function setVoucherSigner(address signer) external onlyOwner {
        _setVoucherSigner(signer);
    }

    function claimed(bytes32 purchaseId) external view returns (bool) {
        return _claimed[purchaseId];
    }

    function purchaseIdOf(uint256 tokenId) external view returns (bytes32) {
        _requireOwned(tokenId);
        return bytes32(tokenId);
    }

    function locked(uint256 tokenId) external view returns (bool) {
        _requireOwned(tokenId);
        return true;
    }

    function tokenURI(uint256 tokenId) public view override returns (string memory) {
        _requireOwned(tokenId);
        return _tokenURIs[tokenId];
    }

    function supportsInterface(bytes4 interfaceId) public view override returns (bool) {
        return interfaceId == type(IERC5192).interfaceId || super.supportsInterface(interfaceId);
    }

    function voucherDigest(Voucher calldata voucher) public view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(
                    VOUCHER_TYPEHASH,
                    voucher.buyer,
                    voucher.purchaseId,
                    keccak256(bytes(voucher.tokenURI)),
                    voucher.deadline
                )
            )
        );
    }

    /// @dev Mints and burns pass; any owner-to-owner move is refused.
    function _update(address to, uint256 tokenId, address auth) internal override returns (address) {
        address from = _ownerOf(tokenId);
        if (from != address(0) && to != address(0)) revert Soulbound();
        return super._update(to, tokenId, auth);
    }

    function _isSignedByVoucherSigner(Voucher calldata voucher, bytes calldata signature) private view returns (bool) {
        (address recovered, ECDSA.RecoverError recoverError,) = ECDSA.tryRecoverCalldata(voucherDigest(voucher), signature);
        return recoverError == ECDSA.RecoverError.NoError && recovered == voucherSigner;
    }

    function _setVoucherSigner(address signer) private {
        voucherSigner = signer;
        emit VoucherSignerChanged(signer);
    }
}
