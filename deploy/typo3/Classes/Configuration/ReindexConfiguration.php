<?php

declare(strict_types=1);

namespace Sitetools\Typo3Reindex\Configuration;

use TYPO3\CMS\Core\Configuration\ExtensionConfiguration;
use TYPO3\CMS\Core\Utility\GeneralUtility;

/**
 * Where sitetools is and what to send it: the environment variables SITETOOLS_ADMIN_URL,
 * SITETOOLS_HOOK_TOKEN and SITETOOLS_FRONTEND_BASE, or else the extension configuration
 * (Admin Tools > Settings > Extension Configuration > sitetools_reindex).
 *
 * The token is sitetools' ADMIN_HOOK_TOKEN, which opens the publish hook and nothing
 * else: a leaked TYPO3 configuration can ask for a re-crawl, never read bookings.
 */
final class ReindexConfiguration
{
    public readonly string $adminUrl;
    public readonly string $hookToken;
    public readonly float $timeout;
    /** @var list<string> site identifiers; empty: every site */
    public readonly array $sites;
    public readonly string $frontendBase;
    public readonly bool $reindexOnFlush;

    public function __construct(ExtensionConfiguration $extensionConfiguration)
    {
        try {
            $settings = (array)$extensionConfiguration->get('sitetools_reindex');
        } catch (\Throwable) {
            $settings = [];
        }
        $this->adminUrl = rtrim(self::env('SITETOOLS_ADMIN_URL') ?? trim((string)($settings['adminUrl'] ?? '')), '/');
        $this->hookToken = self::env('SITETOOLS_HOOK_TOKEN') ?? trim((string)($settings['hookToken'] ?? ''));
        $timeout = (float)($settings['timeout'] ?? 3);
        $this->timeout = $timeout > 0 ? min($timeout, 30.0) : 3.0;
        $this->sites = GeneralUtility::trimExplode(',', (string)($settings['sites'] ?? ''), true);
        $this->frontendBase = rtrim(self::env('SITETOOLS_FRONTEND_BASE') ?? trim((string)($settings['frontendBase'] ?? '')), '/');
        $this->reindexOnFlush = (bool)($settings['reindexOnFlush'] ?? true);
    }

    /** isComplete tells whether sitetools can be called at all. */
    public function isComplete(): bool
    {
        return $this->adminUrl !== '' && $this->hookToken !== '';
    }

    /** coversSite tells whether sitetools indexes the pages of the site with this identifier. */
    public function coversSite(string $identifier): bool
    {
        return $this->sites === [] || in_array($identifier, $this->sites, true);
    }

    private static function env(string $name): ?string
    {
        $value = getenv($name);
        if ($value === false) {
            $value = $_SERVER[$name] ?? $_ENV[$name] ?? null;
        }
        $value = is_string($value) ? trim($value) : '';
        return $value === '' ? null : $value;
    }
}
