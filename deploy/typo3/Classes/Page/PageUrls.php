<?php

declare(strict_types=1);

namespace Sitetools\Typo3Reindex\Page;

use Psr\Http\Message\UriInterface;
use Psr\Log\LoggerInterface;
use Sitetools\Typo3Reindex\Configuration\ReindexConfiguration;
use TYPO3\CMS\Backend\Utility\BackendUtility;
use TYPO3\CMS\Core\ExpressionLanguage\Resolver;
use TYPO3\CMS\Core\Http\Uri;
use TYPO3\CMS\Core\Site\Entity\Site;
use TYPO3\CMS\Core\Site\Entity\SiteLanguage;
use TYPO3\CMS\Core\Site\SiteFinder;
use TYPO3\CMS\Core\Utility\GeneralUtility;

/**
 * The public frontend URLs of pages, as sitetools crawls them.
 *
 * A URL is built by the site's router (slug, language base, route enhancers). With
 * EXT:headless the site's base is usually the API's host: the URL is moved to the
 * frontend's origin, frontendBase in the site (or language) configuration, with its
 * baseVariants, or the extension's own frontendBase setting.
 *
 * Only pages a visitor can see have a URL here: a hidden, deleted, scheduled or
 * access-restricted page, a page marked noindex, a folder, link or shortcut has none.
 */
final class PageUrls
{
    /** Page types that are no page of their own: link, shortcut, mount point. */
    private const NOT_CONTENT = [3, 4, 7];

    public function __construct(
        private readonly SiteFinder $siteFinder,
        private readonly ReindexConfiguration $configuration,
        private readonly LoggerInterface $logger,
    ) {
    }

    /**
     * forRecord returns the URLs of the page a record of pages or tt_content is shown
     * on, in the record's language (every language for a record of "all languages").
     *
     * @return list<string>
     */
    public function forRecord(string $table, int $uid): array
    {
        // Deleted records too: a removed content element changed its page.
        $row = BackendUtility::getRecord($table, $uid, '*', '', false);
        if (!is_array($row)) {
            return [];
        }
        $ctrl = $GLOBALS['TCA'][$table]['ctrl'] ?? [];
        $languageField = (string)($ctrl['languageField'] ?? 'sys_language_uid');
        $parentField = (string)($ctrl['transOrigPointerField'] ?? 'l10n_parent');
        $language = (int)($row[$languageField] ?? 0);
        if ($table === 'pages') {
            $pageUid = $language > 0 && (int)($row[$parentField] ?? 0) > 0 ? (int)$row[$parentField] : $uid;
        } else {
            $pageUid = (int)($row['pid'] ?? 0);
        }
        return $pageUid > 0 ? $this->forPage($pageUid, $language) : [];
    }

    /**
     * forPage returns the URLs of a page (its default language's uid) in one language,
     * or in every language of its site for -1.
     *
     * @return list<string>
     */
    public function forPage(int $pageUid, int $languageId = -1): array
    {
        $page = BackendUtility::getRecord('pages', $pageUid);
        if (!is_array($page) || !$this->isPublic($page)) {
            return [];
        }
        try {
            $site = $this->siteFinder->getSiteByPageId($pageUid);
        } catch (\Throwable) {
            return [];
        }
        if (!$this->configuration->coversSite($site->getIdentifier())) {
            return [];
        }
        if ($languageId < 0) {
            $languages = $site->getLanguages();
        } else {
            try {
                $languages = [$site->getLanguageById($languageId)];
            } catch (\Throwable) {
                return [];
            }
        }
        $urls = [];
        foreach ($languages as $language) {
            if (!$language->isEnabled() || !$this->isTranslatedAndPublic($pageUid, $language->getLanguageId())) {
                continue;
            }
            try {
                $uri = $site->getRouter()->generateUri($pageUid, ['_language' => $language]);
            } catch (\Throwable $e) {
                $this->logger->notice('no URL for the page', ['page' => $pageUid, 'language' => $language->getLanguageId(), 'reason' => $e->getMessage()]);
                continue;
            }
            $urls[] = (string)$this->onFrontend($uri, $site, $language);
        }
        return array_values(array_unique($urls));
    }

    /** @param array<string, mixed> $page */
    private function isPublic(array $page): bool
    {
        $now = $GLOBALS['EXEC_TIME'] ?? time();
        $doktype = (int)($page['doktype'] ?? 1);
        return $doktype < 200 && !in_array($doktype, self::NOT_CONTENT, true)
            && empty($page['deleted']) && empty($page['hidden'])
            && (int)($page['starttime'] ?? 0) <= $now
            && ((int)($page['endtime'] ?? 0) === 0 || (int)$page['endtime'] > $now)
            && in_array((string)($page['fe_group'] ?? ''), ['', '0'], true)
            && empty($page['no_index']);
    }

    private function isTranslatedAndPublic(int $pageUid, int $languageId): bool
    {
        if ($languageId === 0) {
            return true;
        }
        $translations = BackendUtility::getRecordLocalization('pages', $pageUid, $languageId);
        return is_array($translations) && $translations !== [] && $this->isPublic($translations[0]);
    }

    /** onFrontend moves a URL from the site's base to the frontend's origin, if it has another. */
    private function onFrontend(UriInterface $uri, Site $site, SiteLanguage $language): UriInterface
    {
        $base = $this->configuration->frontendBase;
        if ($base === '') {
            $base = $this->headlessFrontendBase($site, $language);
        }
        if ($base === '') {
            return $uri;
        }
        $frontend = new Uri(str_contains($base, '//') ? $base : 'https://' . $base);
        if ($frontend->getHost() === '') {
            return $uri;
        }
        return $uri
            ->withScheme($frontend->getScheme() !== '' ? $frontend->getScheme() : $uri->getScheme())
            ->withHost($frontend->getHost())
            ->withPort($frontend->getPort());
    }

    /**
     * headlessFrontendBase is EXT:headless' frontendBase for this language: the
     * language's own, else the first of the site's baseVariants whose condition holds,
     * else the site's.
     */
    private function headlessFrontendBase(Site $site, SiteLanguage $language): string
    {
        $configuration = $site->getConfiguration();
        if (empty($configuration['headless'])) {
            return '';
        }
        $languageBase = trim((string)($language->toArray()['frontendBase'] ?? ''));
        if ($languageBase !== '') {
            return $languageBase;
        }
        $variants = $configuration['baseVariants'] ?? [];
        if (is_array($variants) && $variants !== []) {
            try {
                $resolver = GeneralUtility::makeInstance(Resolver::class, 'site', []);
                foreach ($variants as $variant) {
                    if (!empty($variant['frontendBase']) && $resolver->evaluate((string)($variant['condition'] ?? 'false'))) {
                        return trim((string)$variant['frontendBase']);
                    }
                }
            } catch (\Throwable $e) {
                $this->logger->notice('a baseVariants condition could not be evaluated', ['site' => $site->getIdentifier(), 'reason' => $e->getMessage()]);
            }
        }
        return trim((string)($configuration['frontendBase'] ?? ''));
    }
}
